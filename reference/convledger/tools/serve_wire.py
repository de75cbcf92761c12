"""``convledger serve-wire``: serve a reference store over the wire protocol (chapter ``wire.md``).

Reads request frames on standard input and writes reply frames on standard
output until standard input ends. ``--store memory`` (the default) makes each
``newStore`` a fresh :class:`~convledger.memory.MemoryStore`, which declares
what it declares in process (the protocol carries all of it); ``--store
sqlite`` a fresh SQLite store on a new temporary file, declaring all but
``migration`` and ``multi_process`` (file-level capabilities without requests),
or, with ``--db PATH``, a store opened on that one file (every handle shares
its data); ``--store postgres`` a fresh PostgreSQL store in a schema of its
own of the database ``--dsn`` names (default ``CONVLEDGER_PG_DSN``, PGS-054),
emptied when the store closes and dropped when the server exits.
``--factory MODULE:FACTORY`` serves any Python store factory instead.

``openStore {location}`` (WIR-040, the crash runs of chapter DUR) opens the
persistent store kept at a location: with ``--store sqlite`` the file
``ledger.sqlite`` in the directory ``location`` (created empty when absent);
with ``--opener MODULE:CALLABLE`` whatever that callable (a locator opener of
``convledger.handles``, taking one text) returns for ``location``. ``--store
memory`` keeps nothing and refuses it with ``not_supported``. With ``--store
postgres`` the directory names a persistent schema ``convledger_crash_<hex>``
of the ``--dsn`` database (its file ``postgres-schema``, PGS-056), which K
server processes on one location share. ``--drop-location DIR`` serves
nothing: it drops what ``openStore DIR`` created and exits (PGS-057), the
``--cleanup`` of a crash run.
Diagnostics go to standard error only: standard output carries frames.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convledger.memory import MemoryStore
from convledger.store import Capability, LedgerStore
from convledger.wire.server import CARRIED, LocationOpener, StoreMaker, WireServer

if TYPE_CHECKING:
    from convledger.postgres import PostgresStore

EXIT_REFUSED = 2


def _wire_sqlite_class() -> type[LedgerStore]:
    """:class:`WireSqliteStore`, defined on first use (SQLite is imported lazily)."""
    from convledger.sqlite import SqliteStore

    class WireSqliteStore(SqliteStore):
        """A SQLite store that declares, and so serves, only what the protocol carries.

        The protocol carries every operation of the store except those of
        ``migration`` and ``multi_process``, which are about the database file
        and have no request (WIR-021). Declaring them absent here also makes the
        store refuse what depends on them (CAP-002), so it is judged on the
        declaration the suite sees.
        """

        declared = SqliteStore.declared & CARRIED

        @property
        def capabilities(self) -> frozenset[Capability]:
            """CAP-001, WIR-021: the handle's own declaration, restricted to the carried."""
            return super().capabilities & CARRIED

    return WireSqliteStore


def _wire_postgres_class() -> type[PostgresStore]:
    """A PostgreSQL store class that declares only what the protocol carries (not multi_process)."""
    from convledger.postgres import PostgresStore

    class WirePostgresStore(PostgresStore):
        """A PostgreSQL store that declares only what the protocol carries (not multi_process)."""

        declared = PostgresStore.declared & CARRIED

    return WirePostgresStore


def wire_postgres_store_factory(dsn: str | None) -> StoreMaker:
    """PGS-054: fresh PostgreSQL stores, each in its own schema, declaring only what is carried."""
    from convledger.postgres.recycling import recycling_store_factory

    return recycling_store_factory(dsn, store_class=_wire_postgres_class())


def open_postgres_location(dsn: str | None) -> LocationOpener:
    """PGS-056: ``openStore`` on the schema a location names, declaring only what is carried."""
    from convledger.postgres.factories import configured_dsn
    from convledger.postgres.locations import open_location

    database = dsn or configured_dsn()
    store_class = _wire_postgres_class()

    def open_store(location: str) -> LedgerStore:
        store: LedgerStore = open_location(database, location, store_class)
        return store

    return open_store


def drop_postgres_location(dsn: str | None, location: str) -> None:
    """PGS-057: drop the schema ``location`` names (nothing when it names none)."""
    from convledger.postgres.factories import configured_dsn
    from convledger.postgres.locations import drop_location

    drop_location(dsn or configured_dsn(), location)


def drop_sqlite_location(dsn: str | None, location: str) -> None:
    """WIR-040: remove the database file of ``location`` and its journals."""
    del dsn
    for suffix in ("", "-wal", "-shm", "-journal"):
        (Path(location) / f"ledger.sqlite{suffix}").unlink(missing_ok=True)


def wire_sqlite_store_factory() -> StoreMaker:
    """A maker of SQLite stores on new temporary files that declare only what is carried."""
    store_class: Any = _wire_sqlite_class()
    parent = Path(tempfile.mkdtemp(prefix="convledger-wire-"))
    atexit.register(shutil.rmtree, parent, True)
    counter = iter(range(1, 2**62))

    def make() -> LedgerStore:
        directory = parent / f"store-{next(counter)}"
        directory.mkdir()
        store: LedgerStore = store_class(
            directory / "ledger.sqlite",
            on_close=lambda: shutil.rmtree(directory, ignore_errors=True),
        )
        return store

    return make


def open_sqlite_location(location: str) -> LedgerStore:
    """WIR-040: the SQLite store of ``location/ledger.sqlite``, declaring only what is carried.

    Every server process started on one location opens the same file (WIR-041).
    """
    directory = Path(location)
    directory.mkdir(parents=True, exist_ok=True)
    store_class: Any = _wire_sqlite_class()
    store: LedgerStore = store_class(directory / "ledger.sqlite")
    return store


LOCATION_OPENERS: dict[str, Callable[[str | None], LocationOpener]] = {
    "sqlite": lambda dsn: open_sqlite_location,
    "postgres": open_postgres_location,
}
"""WIR-040: the persistent stores ``openStore`` opens, by ``--store`` (given ``--dsn``);
memory keeps nothing."""

LOCATION_DROPPERS: dict[str, Callable[[str | None, str], None]] = {
    "sqlite": drop_sqlite_location,
    "postgres": drop_postgres_location,
}
"""PGS-057: ``--drop-location``, by ``--store`` (given ``--dsn`` and the location)."""


def _named_callable(text: str) -> Callable[..., Any]:
    """The callable ``MODULE:CALLABLE`` names (``--factory``, ``--opener``)."""
    module_name, _, attribute = text.partition(":")
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{text} is not callable")
    return target


def _named_opener(text: str) -> LocationOpener:
    """The callable ``MODULE:CALLABLE`` names, as a location opener (WIR-040)."""
    opener = _named_callable(text)

    def open_location(location: str) -> LedgerStore:
        store: LedgerStore = opener(location)
        return store

    return open_location


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve-wire`` subcommand."""
    parser = subparsers.add_parser(
        "serve-wire",
        help="serve a reference store over the wire protocol on stdin/stdout",
        description=(
            "Serve stores over the convledger wire protocol (spec chapter wire.md): "
            "length-prefixed CBOR frames on standard input and output."
        ),
    )
    parser.add_argument("--store", choices=("memory", "sqlite", "postgres"), default="memory",
                        help="the reference store to serve (default: memory)")
    parser.add_argument("--dsn", metavar="DSN",
                        help="with --store postgres: the database (default: $CONVLEDGER_PG_DSN"
                             " or postgresql://postgres@127.0.0.1:5432/postgres)")
    parser.add_argument("--db", metavar="PATH", type=Path,
                        help="with --store sqlite: the database file every store opens")
    parser.add_argument("--factory", metavar="MODULE:FACTORY",
                        help="serve the stores of this zero-argument Python callable instead")
    parser.add_argument("--opener", metavar="MODULE:CALLABLE",
                        help="openStore {location} calls this one-argument Python callable")
    parser.add_argument("--drop-location", metavar="DIR",
                        help="serve nothing: drop the store openStore DIR created, then exit"
                             " (PGS-057; the --cleanup of a crash run)")
    parser.set_defaults(run=run)


def maker_for(args: argparse.Namespace) -> StoreMaker:
    """The store maker the options name."""
    if args.factory:
        factory = _named_callable(args.factory)

        def make_any() -> LedgerStore:
            store: LedgerStore = factory()
            return store

        return make_any
    if args.store == "memory":
        return MemoryStore
    if args.store == "postgres":
        return wire_postgres_store_factory(args.dsn)
    if args.db is None:
        return wire_sqlite_store_factory()
    store_class: Any = _wire_sqlite_class()
    path: Path = args.db

    def make_on_file() -> LedgerStore:
        store: LedgerStore = store_class(path)
        return store

    return make_on_file


def drop(args: argparse.Namespace) -> int:
    """PGS-057: drop what ``openStore`` created at ``--drop-location``; exit 0, or 2 refused."""
    dropper = LOCATION_DROPPERS.get(args.store)
    if dropper is None or args.opener or args.factory:
        print(f"serve-wire: --drop-location needs --store {' or '.join(LOCATION_DROPPERS)}",
              file=sys.stderr)
        return EXIT_REFUSED
    try:
        dropper(args.dsn, args.drop_location)
    except Exception as error:  # a refusal or a driver failure: say so, exit non-zero
        print(f"serve-wire: --drop-location {args.drop_location}: {error}", file=sys.stderr)
        return EXIT_REFUSED
    return 0


def run(args: argparse.Namespace) -> int:
    """Serve until standard input ends; exit 0, or 2 when framing was lost or options are bad."""
    if args.db is not None and args.store != "sqlite":
        print("serve-wire: --db needs --store sqlite", file=sys.stderr)
        return EXIT_REFUSED
    if args.dsn is not None and args.store != "postgres":
        print("serve-wire: --dsn needs --store postgres", file=sys.stderr)
        return EXIT_REFUSED
    if args.drop_location is not None:
        return drop(args)
    # As convledger-conformance --store does: ./mystore.py is importable by --factory and
    # --opener whichever way serve-wire was started (the console script's sys.path lacks it).
    working = os.getcwd()
    if working not in sys.path:
        sys.path.insert(0, working)
    try:
        maker = maker_for(args)
        openers = LOCATION_OPENERS.get(args.store)
        opener = (
            _named_opener(args.opener) if args.opener
            else openers(args.dsn) if openers is not None else None
        )
    except Exception as error:  # a user's factory may fail to import in any way
        print(f"serve-wire: cannot load the store: {error}", file=sys.stderr)
        return EXIT_REFUSED
    sys.stdout.flush()
    # A client stops a server with SIGTERM before SIGKILL (WIR-009): exit through serve's
    # finally, which closes every store it made (a PostgreSQL store then drops its schema).
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _exit_on_signal)
    # WIR-023: frames only on standard output; diagnostics go to standard error.
    return WireServer(maker, opener=opener).serve(sys.stdin.buffer, sys.stdout.buffer)


def _exit_on_signal(number: int, frame: object) -> None:
    """Leave the serving loop as an exit, so the stores are closed on the way out."""
    raise SystemExit(128 + number)
