"""Drop the fresh-store schemas (``convledger_test_%``) that no live session uses.

A store made by ``convledger.postgres:new_schema_store`` drops its schema when
it closes or when its process exits (PGS-051), and a process killed with
SIGKILL (the crash checks kill servers on purpose) has its guardian drop them
(PGS-069). This is the last safety net: `.ci/run` calls it when it ends, so
that a run leaves the machine's PostgreSQL as it found it even if a guardian
was killed too, and prints what it dropped (0 expected). Caution: an emptied
schema pooled by another run still going (PGS-053) has no session either and
is dropped as well. A schema whose name a
live session carries as its ``application_name`` (``convledger:<schema>``) is
kept.

Then it vacuums the system catalogs that creating and dropping schemas fills
with dead rows (``pg_attribute``, ``pg_class``, ``pg_depend``, ...). A run
creates thousands of schemas; on a server with autovacuum off (this project's
machines run theirs so) the dead rows stayed: after many runs the machine's
``postgres`` database held 4 million dead ``pg_attribute`` rows in 1.6 GB, and
every DDL statement, and with it the PostgreSQL suite, slowed down run after
run. A plain ``VACUUM`` is what autovacuum would have done; it changes no
setting and no live row. Usage: ``python scripts/pg_drop_leftovers.py [DSN]``.
"""

from __future__ import annotations

import os
import sys

import psycopg
from psycopg import sql

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
CATALOGS = ("pg_attribute", "pg_class", "pg_depend", "pg_type", "pg_index", "pg_constraint",
            "pg_namespace", "pg_attrdef", "pg_trigger", "pg_description", "pg_sequence",
            "pg_proc", "pg_rewrite", "pg_shdepend", "pg_statistic", "pg_init_privs")
"""The catalogs a schema's creation and its drop write to (its tables, columns, indexes,
constraints, triggers, functions and their dependencies)."""


def main(argv: list[str]) -> int:
    dsn = argv[0] if argv else os.environ.get("CONVLEDGER_PG_DSN", DEFAULT_DSN)
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as connection:
        names = [row[0] for row in connection.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'convledger\\_test\\_%'"
            " AND NOT EXISTS (SELECT 1 FROM pg_stat_activity"
            " WHERE application_name = 'convledger:' || nspname) ORDER BY 1")]
        for name in names:
            connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(name)))
        print(f"PostgreSQL: dropped {len(names)} fresh-store schema(s) no session used"
              f"{' left behind' if names else ''}")
        try:
            connection.execute("VACUUM " + ", ".join(f"pg_catalog.{name}" for name in CATALOGS))
        except psycopg.Error as error:  # not the owner of the catalogs: say so, fail nothing
            print(f"PostgreSQL: the catalogs were not vacuumed: {error}")
        else:
            size = connection.execute("SELECT pg_size_pretty(pg_database_size(current_database()))"
                                      ).fetchone()
            print(f"PostgreSQL: catalogs vacuumed; the database holds {size[0] if size else '?'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
