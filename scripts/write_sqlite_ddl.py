"""Write (or check) ``spec/schemas/sqlite-v1.sql`` .. ``sqlite-v4.sql`` from the reference's schema.

Each file is the DDL that creates one schema version of chapter SQL on an empty
database, statement by statement in the order the reference runs them, followed by the
row of ``meta`` that names the version (SQL-001). The statements are the text of
``convledger.sqlite.schema`` as it is, so a file opened by the reference compares equal
object by object (SQL-011). ``tests/test_sqlite_ddl_spec.py`` requires the files to be
exactly what this script writes, and requires a file made by running one to open.

Usage::

    python scripts/write_sqlite_ddl.py          # rewrite the four files
    python scripts/write_sqlite_ddl.py --check  # exit 1 when one differs
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from convledger.sqlite import schema

SPEC_SCHEMAS = Path(__file__).resolve().parent.parent / "spec" / "schemas"

_HEADER = """\
-- Chapter SQL (spec/sqlite.md), schema version {version}: the DDL that creates it on an
-- empty database, in this order, in one transaction (SQL-010), then the row of meta that
-- names the version (SQL-001). Opening compares each object of sqlite_master with its
-- statement here after the normalization of SQL-011. Pages of 16 KiB (PRAGMA page_size =
-- 16384, set before the first statement) are recommended, not required (SQL-010).
-- Generated from reference/convledger/sqlite/schema.py by scripts/write_sqlite_ddl.py;
-- tests/test_sqlite_ddl_spec.py keeps the two equal.
"""


def ddl_path(version: int) -> Path:
    """Where the DDL of ``version`` lives in the spec."""
    return SPEC_SCHEMAS / f"sqlite-v{version}.sql"


def ddl_text(version: int) -> str:
    """The file of ``version``: the header, each statement ended by ';', then the meta row."""
    statements = [_laid_out(sql).strip() + ";"
                  for sql in schema.creation_script(version)]
    meta = (f"INSERT INTO {schema.META_TABLE} (key, value) "
            f"VALUES ('{schema.VERSION_KEY}', '{version}');")
    return _HEADER.format(version=version) + "\n" + "\n\n".join([*statements, meta]) + "\n"


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
        print(f"stale: {', '.join(stale)}; run python scripts/write_sqlite_ddl.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
