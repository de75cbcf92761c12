"""Write (or check) ``spec/schemas/postgres-v1.sql`` and ``-v2.sql`` from the reference's schema.

Each file is the DDL that creates one schema version of chapter PGS in an empty
PostgreSQL schema named ``convledger``: the schema itself, the ``search_path`` naming it,
then every statement of ``convledger.postgres.schema.ddl_batch`` in the order the reference
runs them, followed by the row of ``meta`` that names the version (PGS-002). The
statements are unqualified, as the reference's are: the store's connections set
``search_path`` to the store's schema, and opening compares the catalog with every
qualification by the schema's name removed (``schema.unqualified``, PGS-023).
``tests/test_postgres_ddl_spec.py`` requires the files to be exactly what this script
writes, and requires a schema made by running one to open.

Usage::

    python scripts/write_postgres_ddl.py          # rewrite the two files
    python scripts/write_postgres_ddl.py --check  # exit 1 when one differs
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from convledger.postgres import schema

SPEC_SCHEMAS = Path(__file__).resolve().parent.parent / "spec" / "schemas"

SCHEMA_STATEMENTS = (
    f"CREATE SCHEMA IF NOT EXISTS {schema.DEFAULT_SCHEMA};",
    f"SET search_path TO {schema.DEFAULT_SCHEMA};",
)
"""The two statements that name the schema; nothing after them does."""

_HEADER = """\
-- Chapter PGS (spec/postgres.md), schema version {version}: the DDL that creates it in an
-- empty PostgreSQL schema named convledger, in this order, in one transaction (PGS-020),
-- then the row of meta that names the version (PGS-002).
-- Only the first two statements name the schema; every later name is unqualified and
-- resolves through search_path, as on every connection of the store (PGS-002). To create
-- the version in a schema of another name, write that name, as a quoted identifier when
-- it needs quoting, in place of convledger in those two statements and change nothing
-- else. Opening compares the catalog's shape of each object (columns and types, indexes,
-- function signatures, triggers) with every qualification by the schema's name removed,
-- never this text (PGS-006, PGS-023).
-- Generated from reference/convledger/postgres/schema.py by scripts/write_postgres_ddl.py;
-- tests/test_postgres_ddl_spec.py keeps the two equal.
"""


def ddl_path(version: int) -> Path:
    """Where the DDL of ``version`` lives in the spec."""
    return SPEC_SCHEMAS / f"postgres-v{version}.sql"


def statements(version: int) -> list[str]:
    """The statements of ``version`` that ``ddl_batch`` joins, in order, as the schema has them."""
    return [item.sql for item in schema.VERSIONS[version] if item.sql]


def ddl_text(version: int) -> str:
    """The file of ``version``: header, the schema's two, each statement and ';', the meta row."""
    laid_out = [_laid_out(sql).strip() + ";" for sql in statements(version)]
    meta = (f"INSERT INTO {schema.META_TABLE} (key, value) "
            f"VALUES ('{schema.VERSION_KEY}', '{version}');")
    parts = ["\n".join(SCHEMA_STATEMENTS), *laid_out, meta]
    return _HEADER.format(version=version) + "\n" + "\n\n".join(parts) + "\n"


def _laid_out(sql: str) -> str:
    """The schema's DDL with its continuation lines dedented together (the first is flush)."""
    first, _, rest = sql.partition("\n")
    return first if not rest else first + "\n" + textwrap.dedent(rest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    arguments = parser.parse_args(argv)
    stale = []
    for version in schema.KNOWN_VERSIONS:
        path, text = ddl_path(version), ddl_text(version)
        if arguments.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)}; run python scripts/write_postgres_ddl.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
