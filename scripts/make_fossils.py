"""Build the fossil version 1 databases and the archives they must migrate to.

Fossils are kept forever (SQL-038): every future version of the store must
open a copy of each ``tests/fossils/v1-*.sqlite``, migrate it with the clock
and id generator named in ``tests/fossils/manifest.json``, and export every
conversation to exactly the bytes of its expected archive. This script is how
they were made; it refuses to overwrite existing fossils unless ``--force`` is
given, because regenerating a fossil hides exactly the change it guards
against.

    python scripts/make_fossils.py [--out tests/fossils] [--force]

The rows hold the records of chapter TRN (SQL-054): the transitions below
are applied by the reference rules on an in-memory store and its records are
written as version 1 rows, so that every record is valid and every column
agrees with its record. They cover: several conversations; compacted
(inactive) messages under an active summary at a lower position; runs that
completed, were absorbed, are running (with a checkpoint), queued, failed and
cancelled, with their admissions and inputs; a checkpoint and an operation;
ids with NUL and non-ASCII characters; times with offsets whose text order
differs from their instant order; a conversation with a head only (no
``asOf``); and a database with no conversations at all.

The fossils were regenerated in this form when the runtime records of chapter
TRN were specified; the earlier fossils held records of no specified shape.
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

from convledger.canonical import JsonValue
from convledger.runtime.records import Head
from convledger.runtime.state import RuntimeState
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Operation,
    Terminal,
    Transition,
)
from convledger.sqlite import SqliteStore, schema
from convledger.sqlite.fixtures import V1Rows, runtime_states, v1_rows_of

MIGRATED_AT = "2026-02-01T00:00:00.000Z"
"""The clock of fossil migrations."""
EVENT_ID_PREFIX = "fossil-baseline-"
"""Baseline event ids are this prefix and a four-digit counter from 0001."""

def fixed_clock() -> str:
    """The clock of fossil migrations."""
    return MIGRATED_AT


def counting_ids() -> Callable[[], str]:
    """The id generator of fossil migrations: prefix-0001, prefix-0002, ..."""
    counter = itertools.count(1)
    return lambda: f"{EVENT_ID_PREFIX}{next(counter):04d}"


ALPHA = "conv-alpha"
UNICODE = "ünïcødé/会話\x00nul"
HEAD_ONLY = "head-only"
RUNS_ONLY = "runs-only"


def _text(text: str) -> dict[str, JsonValue]:
    return {"type": "text", "text": text}


def _alpha() -> list[tuple[str, Transition, str]]:
    """Completed, absorbed and running runs; four messages compacted under a summary at 0.

    r-a3 is acquired at 19:00:06+09:00 (10:00:06Z: later as text, earlier as an
    instant than its checkpoint at 10:00:07.500Z, which is ``asOf``).
    """
    c = ALPHA
    return [
        (c, Accept("idem-a1", "m-a1", "r-a1", "m-a2", _text("Plan a trip to Lyon")),
         "2026-01-10T10:00:01.000Z"),
        (c, Acquire("r-a1", "worker-1"), "2026-01-10T10:00:01.500Z"),
        (c, Checkpoint("r-a1", Fence("worker-1", 1, 1),
                       {"id": "draft-a1", "status": "streaming", "parts": ["Which"]}),
         "2026-01-10T10:00:01.800Z"),
        (c, Terminal("r-a1", Fence("worker-1", 2, 1), "success", _text("Which dates?")),
         "2026-01-10T10:00:02.000Z"),
        (c, Accept("idem-a2", "m-a3", "r-a2", "m-a4", _text("The first week of May")),
         "2026-01-10T10:00:03.000Z"),
        (c, Acquire("r-a2", "worker-1"), "2026-01-10T10:00:03.100Z"),
        (c, Accept("idem-a3", "m-a5", "r-a3", "m-a6", _text("Or the second")),
         "2026-01-10T10:00:03.200Z"),
        (c, Operation("r-a2", Fence("worker-1", 1, 1), {"tool": "trains", "call": "search"}),
         "2026-01-10T10:00:03.500Z"),
        (c, Terminal("r-a2", Fence("worker-1", 2, 1), "success", _text("Trains leave hourly"),
                     absorb_run_ids=("r-a3",)), "2026-01-10T10:00:04.000Z"),
        (c, Compact(9, "m-a1", "m-a4", "m-sum", _text("Summary: a May trip to Lyon by train")),
         "2026-01-10T10:00:05.000Z"),
        (c, Accept("idem-a4", "m-a7", "r-a4", "m-a8", _text("Book the cheapest one")),
         "2026-01-10T10:00:06.000Z"),
        (c, Acquire("r-a4", "worker-1"), "2026-01-10T19:00:06+09:00"),
        (c, Checkpoint("r-a4", Fence("worker-1", 1, 1),
                       {"id": "draft-a8", "status": "streaming", "parts": ["Looking for fares…"]}),
         "2026-01-10T10:00:07.500Z"),
    ]


def _unicode() -> list[tuple[str, Transition, str]]:
    """NUL and non-ASCII ids and text; a completed and a queued run; +05:30 offsets."""
    c = UNICODE
    return [
        (c, Accept("idem\x00ü1", "m-ü1", "r-ü1", "m-ü2", _text("Grüße 🦜 aus Köln")),
         "2026-01-11T09:30:00+05:30"),
        (c, Acquire("r-ü1", "wörker"), "2026-01-11T04:00:10Z"),
        (c, Terminal("r-ü1", Fence("wörker", 1, 1), "success", _text("こんにちは\x00世界")),
         "2026-01-11T04:00:30Z"),
        (c, Accept("idem\x00ü2", "m-ü3", "r-ü2", "m-ü4", _text("noch eine Frage")),
         "2026-01-11T09:31:00+05:30"),
    ]


def _runs_only() -> list[tuple[str, Transition, str]]:
    """A failed run and a cancelled one (nanosecond time)."""
    c = RUNS_ONLY
    return [
        (c, Accept("idem-d1", "m-d1", "r-d1", "m-d2", _text("one")), "2026-01-13T07:58:00Z"),
        (c, Acquire("r-d1", "worker-2"), "2026-01-13T07:58:30Z"),
        (c, Terminal("r-d1", Fence("worker-2", 1, 1), "provider_failure", _text("failed")),
         "2026-01-13T07:59:00Z"),
        (c, Accept("idem-d2", "m-d3", "r-d2", "m-d4", _text("two")), "2026-01-13T07:59:30Z"),
        (c, Acquire("r-d2", "worker-2"), "2026-01-13T07:59:40Z"),
        (c, Terminal("r-d2", Fence("worker-2", 1, 1), "cancelled", _text("stopped")),
         "2026-01-13T08:00:00.000000001Z"),
    ]


def v1_rows() -> V1Rows:
    """The rows of the populated fossil: three conversations run by the reference rules and
    one with a head only (no ``asOf``)."""
    states = runtime_states([*_alpha(), *_unicode(), *_runs_only()])
    head_only = RuntimeState(HEAD_ONLY)
    head_only.head_record = Head(HEAD_ONLY, 0)
    return v1_rows_of([*states, (head_only, "2026-01-12T00:00:00Z")])


def write_v1(path: Path, *, populated: bool) -> None:
    """A version 1 database, small pages, rollback journal: one self-contained file."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA page_size = 1024")
    connection.execute("BEGIN")
    for statement in schema.creation_script(1):
        connection.execute(statement)
    connection.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (schema.VERSION_KEY, "1"))
    if populated:
        rows = v1_rows()
        connection.executemany("INSERT INTO heads VALUES (?, ?, ?, ?)", rows.heads)
        connection.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", rows.messages)
        connection.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)", rows.runs)
        connection.executemany("INSERT INTO admissions VALUES (?, ?, ?, ?, ?, ?)",
                               rows.admissions)
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
