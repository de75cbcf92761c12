"""Build the fossil version 1 databases and the archives they must migrate to.

Fossils are kept forever (SQL-038): every future version of the store must
open a copy of each ``tests/fossils/v1-*.sqlite``, migrate it with the clock
and id generator named in ``tests/fossils/manifest.json``, and export every
conversation to exactly the bytes of its expected archive. This script is how
they were made; it refuses to overwrite existing fossils unless ``--force`` is
given, because regenerating a fossil hides exactly the change it guards
against.

    python scripts/make_fossils.py [--out tests/fossils] [--force]

The rows are written by hand, not by a runtime, and cover: several
conversations; compacted (inactive) and active messages with a summary; runs
that completed, were absorbed, are running, queued, failed and cancelled;
admissions keyed by idempotency key; ids with NUL and non-ASCII characters;
times with offsets whose text order differs from their instant order; a
conversation with a head only (no ``asOf``); and a database with no
conversations at all.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.sqlite import SqliteStore, schema

MIGRATED_AT = "2026-02-01T00:00:00.000Z"
"""The clock of fossil migrations."""
EVENT_ID_PREFIX = "fossil-baseline-"
"""Baseline event ids are this prefix and a four-digit counter from 0001."""

Row = tuple[object, ...]


def fixed_clock() -> str:
    """The clock of fossil migrations."""
    return MIGRATED_AT


def counting_ids() -> Callable[[], str]:
    """The id generator of fossil migrations: prefix-0001, prefix-0002, ..."""
    counter = itertools.count(1)
    return lambda: f"{EVENT_ID_PREFIX}{next(counter):04d}"


def _json(value: JsonValue) -> str:
    return canonical.encode(value).decode("utf-8")


def _head(conversation_id: str, version: int, updated_at: str) -> Row:
    record: dict[str, JsonValue] = {
        "conversationId": conversation_id, "version": version, "updatedAt": updated_at,
    }
    return (conversation_id, version, updated_at, _json(record))


def _message(
    conversation_id: str, position: int, message_id: str, role: str, text: str,
    created_at: str, *, active: bool, **extra: JsonValue,
) -> Row:
    record: dict[str, JsonValue] = {
        "messageId": message_id, "position": position, "role": role, "active": active,
        "createdAt": created_at, "content": [{"type": "text", "text": text}], **extra,
    }
    return (conversation_id, position, message_id, int(active), created_at, _json(record))


def _run(
    conversation_id: str, run_id: str, ordinal: int, state: str, updated_at: str,
    **extra: JsonValue,
) -> Row:
    record: dict[str, JsonValue] = {
        "runId": run_id, "ordinal": ordinal, "state": state, "updatedAt": updated_at, **extra,
    }
    return (conversation_id, run_id, ordinal, state, updated_at, _json(record))


def _admission(
    conversation_id: str, key: str, run_id: str, ordinal: int, admitted_at: str,
    input_message_id: str,
) -> Row:
    record: dict[str, JsonValue] = {
        "idempotencyKey": key, "runId": run_id, "ordinal": ordinal,
        "admittedAt": admitted_at, "inputMessageId": input_message_id,
    }
    return (conversation_id, key, run_id, ordinal, admitted_at, _json(record))


ALPHA = "conv-alpha"
UNICODE = "ünïcødé/会話\x00nul"
HEAD_ONLY = "head-only"
RUNS_ONLY = "runs-only"

HEADS = [
    _head(ALPHA, 9, "2026-01-10T10:00:09.000Z"),
    _head(UNICODE, 3, "2026-01-11T09:31:00+05:30"),
    _head(HEAD_ONLY, 0, "2026-01-12T00:00:00Z"),
    _head(RUNS_ONLY, 4, "2026-01-13T08:00:00.000000001Z"),
]
MESSAGES = [
    _message(ALPHA, 1, "m-a1", "user", "Plan a trip to Lyon", "2026-01-10T10:00:01.000Z",
             active=False, compactedInto="m-a5"),
    _message(ALPHA, 2, "m-a2", "assistant", "Which dates?", "2026-01-10T10:00:02.000Z",
             active=False, compactedInto="m-a5"),
    _message(ALPHA, 3, "m-a3", "user", "The first week of May", "2026-01-10T10:00:03.000Z",
             active=False, compactedInto="m-a5"),
    _message(ALPHA, 4, "m-a4", "assistant", "Trains leave hourly", "2026-01-10T10:00:04.000Z",
             active=False, compactedInto="m-a5"),
    _message(ALPHA, 5, "m-a5", "system", "Summary: a May trip to Lyon by train",
             "2026-01-10T10:00:05.000Z", active=True,
             summarizes={"fromPosition": 1, "toPosition": 4}),
    _message(ALPHA, 6, "m-a6", "user", "Book the cheapest one", "2026-01-10T10:00:06.000Z",
             active=True),
    _message(ALPHA, 7, "m-a7", "assistant", "Looking for fares…", "2026-01-10T10:00:07.500Z",
             active=True),
    _message(UNICODE, 1, "m-ü1", "user", "Grüße 🦜 aus Köln", "2026-01-11T09:30:00+05:30",
             active=True),
    _message(UNICODE, 2, "m-ü2", "assistant", "こんにちは\x00世界", "2026-01-11T04:00:30Z",
             active=True),
]
RUNS = [
    _run(ALPHA, "r-a1", 1, "completed", "2026-01-10T10:00:04.500Z", terminalReason="success",
         inputMessageId="m-a1", assistantMessageId="m-a2", revision=3, fencingToken=1),
    _run(ALPHA, "r-a2", 2, "superseded", "2026-01-10T10:00:06.100Z", terminalReason="absorbed",
         absorbedIntoRunId="r-a3", inputMessageId="m-a6", revision=1, fencingToken=0),
    # Later as text, earlier as an instant (10:00:06Z): asOf must be m-a7's 10:00:07.500Z.
    _run(ALPHA, "r-a3", 3, "running", "2026-01-10T19:00:06+09:00", owner="worker-1",
         inputMessageId="m-a6", assistantMessageId="m-a7", revision=4, fencingToken=2),
    _run(UNICODE, "r-ü1", 1, "queued", "2026-01-11T09:31:00+05:30", inputMessageId="m-ü1",
         revision=0, fencingToken=0),
    _run(RUNS_ONLY, "r-d1", 1, "failed", "2026-01-13T07:59:00Z",
         terminalReason="provider_failure", revision=2, fencingToken=1),
    _run(RUNS_ONLY, "r-d2", 2, "cancelled", "2026-01-13T08:00:00.000000001Z",
         terminalReason="cancelled", revision=1, fencingToken=1),
]
ADMISSIONS = [
    _admission(ALPHA, "idem-a1", "r-a1", 1, "2026-01-10T10:00:01.000Z", "m-a1"),
    _admission(ALPHA, "idem-a2", "r-a2", 2, "2026-01-10T10:00:06.000Z", "m-a6"),
    _admission(ALPHA, "idem-a3", "r-a3", 3, "2026-01-10T10:00:06.050Z", "m-a6"),
    _admission(UNICODE, "idem\x00ü1", "r-ü1", 1, "2026-01-11T09:30:00+05:30", "m-ü1"),
    _admission(RUNS_ONLY, "idem-d1", "r-d1", 1, "2026-01-13T07:58:00Z", "m-d1"),
    _admission(RUNS_ONLY, "idem-d2", "r-d2", 2, "2026-01-13T07:59:30Z", "m-d2"),
]


def write_v1(path: Path, *, populated: bool) -> None:
    """A version 1 database, small pages, rollback journal: one self-contained file."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA page_size = 1024")
    connection.execute("BEGIN")
    for statement in schema.creation_script(1):
        connection.execute(statement)
    connection.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (schema.VERSION_KEY, "1"))
    if populated:
        connection.executemany("INSERT INTO heads VALUES (?, ?, ?, ?)", HEADS)
        connection.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", MESSAGES)
        connection.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)", RUNS)
        connection.executemany("INSERT INTO admissions VALUES (?, ?, ?, ?, ?, ?)", ADMISSIONS)
    connection.execute("COMMIT")
    connection.execute("VACUUM")
    connection.close()


def expected_archives(fossil: Path, scratch: Path) -> list[tuple[str, bytes]]:
    """Migrate a copy of ``fossil`` with the fossil clock and ids; export each conversation."""
    copy = scratch / fossil.name
    shutil.copyfile(fossil, copy)
    store = SqliteStore(copy, clock=fixed_clock, new_event_id=counting_ids())
    try:
        assert store.migration is not None
        return [
            (conversation, store.export_conversation(conversation))
            for conversation in store.migration.conversations
        ]
    finally:
        store.close()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    """Write the fossils, their expected archives and the manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fossils"))
    parser.add_argument("--force", action="store_true", help="overwrite existing fossils")
    args = parser.parse_args()
    out: Path = args.out
    if (out / "manifest.json").exists() and not args.force:
        print(f"{out} already holds fossils; they are kept forever (use --force)", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    fossils = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, populated in (("v1-runtime", True), ("v1-empty", False)):
            fossil = out / f"{name}.sqlite"
            fossil.unlink(missing_ok=True)
            write_v1(fossil, populated=populated)
            conversations = []
            for index, (conversation, data) in enumerate(
                expected_archives(fossil, Path(scratch)), start=1
            ):
                archive = f"{name}/{index:02d}.json"
                (out / name).mkdir(exist_ok=True)
                (out / archive).write_bytes(data)
                conversations.append(
                    {"conversationId": conversation, "archive": archive, "sha256": _sha256(data)}
                )
            fossils.append(
                {
                    "file": fossil.name,
                    "sha256": _sha256(fossil.read_bytes()),
                    "conversations": conversations,
                }
            )
    manifest = {
        "$comment": "Fossil v1 databases and the archives each conversation must export to "
        "after migration with this clock and these ids. Kept forever; see "
        "scripts/make_fossils.py.",
        "migratedAt": MIGRATED_AT,
        "eventIdPrefix": EVENT_ID_PREFIX,
        "eventIdDigits": 4,
        "fossils": fossils,
    }
    text = json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    (out / "manifest.json").write_text(text, "utf-8")
    print(f"wrote {len(fossils)} fossils to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
