"""Checks of chapter SQL, opening: new files, reopens and refused opens (SQL-010 .. SQL-022).

A new file is version 2 with 16 KiB pages and a file store declares the file
capabilities (SQL-010, SQL-011, SQL-048); a broken schema, FTS5 unavailable,
partial or unknown, and a write through a read-only handle are each refused
with their kind, and every refusal leaves its file byte-identical (SQL-022).
The helpers and the interface these checks need are those of
:mod:`convledger_conformance.sqlite.checks`.
"""

from __future__ import annotations

from functools import partial

from convledger.sqlite import Fts5PartialError, PartialSchemaError, SqliteStore, schema
from convledger.sqlite.fixtures import deny_fts5, execute_raw, write_v1_database
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import plain, refused_unchanged, sqlite_store, workspace
from convledger_conformance.support import draft, drafts, fail


@check("SQL-010", "SQL-011", "SQL-048", capability=Capability.PERSISTENCE,
       also=(Capability.MIGRATION,))
def check_sqlite_create_and_reopen(ctx: CheckContext) -> None:
    """SQL-010, SQL-011, SQL-048: a new file is version 2 with 16 KiB pages; it reopens as is."""
    ids = ("SQL-010", "SQL-011", "SQL-048")
    with sqlite_store(ctx, ids) as store:
        if store.outcome != "created":
            fail("SQL-010", f"a fresh file was {store.outcome!r}, not created")
        connection = plain(store.path)
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        connection.close()
        if page_size != schema.NEW_FILE_PAGE_SIZE:
            fail("SQL-010", f"a new file has pages of {page_size} bytes")
        file_capabilities = {Capability.PERSISTENCE, Capability.MIGRATION,
                             Capability.MULTI_PROCESS}
        if not file_capabilities <= store.capabilities:
            fail("SQL-048", f"a file store declares {sorted(c.value for c in store.capabilities)}")
        store.append("c", drafts("c", 2))
        reopened = store.reopen()
        if not isinstance(reopened, SqliteStore) or reopened.outcome != "opened":
            fail("SQL-011", "a valid version 2 file did not open as it was")
        reopened.close()
        memory = type(store)(":memory:")
        if memory.capabilities & file_capabilities:
            fail("SQL-048", "a store on :memory: declares file capabilities")
        memory.close()


BREAKAGES: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("a newer version", (f"UPDATE meta SET value = '{schema.LATEST_VERSION + 1}'",),
     "not_supported", "SQL-012"),
    ("an unreadable version", ("UPDATE meta SET value = 'two'",), "integrity", "SQL-013"),
    ("no meta table", ("DROP TABLE meta",), "integrity", "SQL-014"),
    ("a missing index", ("DROP INDEX events_by_event_id",), "integrity", "SQL-015"),
    ("an altered table", ("ALTER TABLE children ADD COLUMN extra TEXT",), "integrity",
     "SQL-016"),
)
"""(what, statements that break a valid version 2 file, kind, requirement)."""


@check("SQL-012", "SQL-013", "SQL-014", "SQL-015", "SQL-016", "SQL-020", "SQL-022",
       capability=Capability.MIGRATION)
def check_sqlite_schema_refusals(ctx: CheckContext) -> None:
    """SQL-012 .. SQL-016, SQL-020: each broken schema is refused with its kind, file unchanged."""
    ids = ("SQL-012", "SQL-013", "SQL-014", "SQL-015", "SQL-016", "SQL-020", "SQL-022")
    with workspace(ctx, ids) as (opener, directory):
        for number, (what, statements, kind, requirement) in enumerate(BREAKAGES):
            path = directory / f"broken-{number}.sqlite"
            opener(path).close()
            execute_raw(path, statements)
            error = refused_unchanged(partial(opener, path), path, kind, [requirement], what)
            if requirement == "SQL-015" and (
                not isinstance(error, PartialSchemaError)
                or error.missing != ("events_by_event_id",)
            ):
                fail("SQL-015", "the refusal does not name the missing object")
        v1 = directory / "v1-with-events.sqlite"
        write_v1_database(v1)
        execute_raw(v1, ["CREATE TABLE events (x)"])
        refused_unchanged(lambda: opener(v1), v1, "integrity", ["SQL-016"],
                          "a version 1 file holding version 2 objects")
        text = directory / "text.sqlite"
        text.write_bytes(b"this is not a database\n" * 40)
        refused_unchanged(lambda: opener(text), text, "integrity", ["SQL-020"],
                          "a file that is not a database")


@check("SQL-017", "SQL-018", "SQL-019", "SQL-022", capability=Capability.MIGRATION)
def check_sqlite_fts_refusals(ctx: CheckContext) -> None:
    """SQL-017 .. SQL-019: FTS5 unavailable, partial or unknown is refused; never opened without."""
    ids = ("SQL-017", "SQL-018", "SQL-019", "SQL-022")
    with workspace(ctx, ids) as (opener, directory):
        fresh = directory / "never.sqlite"
        refused_unchanged(lambda: opener(fresh, connection_hook=deny_fts5), fresh,
                          "not_supported", ["SQL-017"], "a new file without FTS5")
        if fresh.exists():
            fail(("SQL-017", "SQL-022"), "a refused open left a new file behind")
        v1 = directory / "v1.sqlite"
        write_v1_database(v1)
        refused_unchanged(lambda: opener(v1, connection_hook=deny_fts5), v1, "not_supported",
                          ["SQL-017"], "migrating without FTS5")
        cases: list[tuple[str, str, str | None, str, str]] = [
            ("SQL-017", "not_supported", None, "a version 3 file without FTS5", ""),
            ("SQL-018", "integrity", "DROP TRIGGER events_fts_after_delete", "a missing trigger",
             "events_fts_after_delete"),
            ("SQL-018", "integrity", "DROP TABLE events_fts_config", "a missing shadow table",
             "events_fts_config"),
            ("SQL-018", "integrity", "DROP TABLE events_fts", "a missing FTS5 table",
             "events_fts"),
            ("SQL-019", "integrity", "DROP TABLE events_fts; CREATE VIRTUAL TABLE events_fts "
             "USING fts5(body, scope, conversation_id UNINDEXED, seq UNINDEXED)",
             "another tokenizer", ""),
        ]
        for number, (requirement, kind, statements, what, missing) in enumerate(cases):
            path = directory / f"fts-{number}.sqlite"
            opener(path).close()
            if statements is not None:
                execute_raw(path, statements.split("; "))
            hook = deny_fts5 if statements is None else None
            error = refused_unchanged(partial(opener, path, connection_hook=hook), path, kind,
                                      [requirement], what)
            if missing and (
                not isinstance(error, Fts5PartialError) or missing not in error.missing
            ):
                fail("SQL-018", f"{what}: the refusal does not name {missing}")


@check("SQL-021", "SQL-022", capability=Capability.MIGRATION)
def check_sqlite_read_only(ctx: CheckContext) -> None:
    """SQL-021: opens that must write and writes through a read-only handle are unavailable."""
    with workspace(ctx, ["SQL-021", "SQL-022"]) as (opener, directory):
        v1 = directory / "v1.sqlite"
        write_v1_database(v1)
        refused_unchanged(lambda: opener(v1, read_only=True), v1, "unavailable", ["SQL-021"],
                          "a read-only open of a version 1 file")
        path = directory / "v2.sqlite"
        writer = opener(path)
        writer.append("c", [draft("e1")])
        writer.close()
        reader = opener(path, read_only=True)
        try:
            refused_unchanged(lambda: reader.append("c", [draft("e2")]), path, "unavailable",
                              ["SQL-021"], "an append through a read-only handle")
        finally:
            reader.close()
