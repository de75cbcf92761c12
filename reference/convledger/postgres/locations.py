"""Persistent PostgreSQL stores kept at a location (PGS-056, PGS-057; WIR-040, WIR-041).

A crash run of chapter DUR starts the server again and again on one location
(a directory) and asks ``openStore {location}`` for the store kept there. A
PostgreSQL store lives in the database, not in the directory: the directory
only names it. Its file :data:`SCHEMA_FILE` holds the name of one schema,
``convledger_crash_<32 hex digits>``, which the first opener makes up and
writes atomically (a complete temporary file hard-linked to the name, which
fails when another opener linked first, so every process reads the one name
that won). Every server process on the location then opens that schema;
PGS-020 serializes its creation. Closing a store never drops it: it is
dropped by :func:`drop_location`, which ``serve-wire --drop-location`` calls
(the ``--cleanup`` of a crash run).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import uuid
from pathlib import Path

from convledger.errors import IntegrityError
from convledger.postgres.factories import drop_schema
from convledger.postgres.store import PostgresStore

SCHEMA_FILE = "postgres-schema"
"""PGS-056: the file of a location that names its schema."""
LOCATION_PREFIX = "convledger_crash_"
"""PGS-056: the prefix of every schema a location names (``convledger_crash_%``)."""
SCHEMA_NAME = re.compile(rf"{LOCATION_PREFIX}[0-9a-f]{{32}}")


def _read_name(path: Path) -> str:
    """PGS-056: the schema a location's file names; ``integrity`` when it names none."""
    text = path.read_text("utf-8").strip()
    if not SCHEMA_NAME.fullmatch(text):
        raise IntegrityError(
            f"{path} does not name a schema {LOCATION_PREFIX}<32 hex digits>",
            requirement="PGS-056",
        )
    return text


def location_schema(location: str) -> str:
    """PGS-056: the schema ``location`` names, written atomically by its first opener."""
    directory = Path(location)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SCHEMA_FILE
    if not path.exists():
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".postgres-schema-")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(f"{LOCATION_PREFIX}{uuid.uuid4().hex}\n")
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another opener linked first: its name
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    return _read_name(path)


def open_location(dsn: str, location: str,
                  store_class: type[PostgresStore] = PostgresStore) -> PostgresStore:
    """PGS-056: the store of the schema ``location`` names, created empty by the first opener."""
    return store_class(dsn, schema=location_schema(location))


def drop_location(dsn: str, location: str) -> str | None:
    """PGS-057: drop the schema ``location`` names and remove its file; the schema, or None."""
    path = Path(location) / SCHEMA_FILE
    if not path.exists():
        return None
    schema = _read_name(path)
    drop_schema(dsn, schema)
    path.unlink()
    return schema
