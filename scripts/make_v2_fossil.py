"""Build the fossil version 2 database (schema of release 0.1.0) and what it must answer.

Run it with the code of a store that writes schema version 2 (release 0.1.0,
or main before schema version 3) first on the import path::

    PYTHONPATH=/path/to/convledger-0.1.0/reference python scripts/make_v2_fossil.py

It copies ``tests/fossils/v1-runtime.sqlite``, lets that store migrate it (the
fossil clock and ids of ``manifest.json``), appends ledger events whose text
holds words, non-ASCII letters, nested strings and a NUL inside a string, to
the migrated conversations and to a conversation of its own, and purges one
conversation. It writes ``tests/fossils/v2-ledger.sqlite`` and
``tests/fossils/v2-manifest.json``: the file's sha256, each live
conversation's export, and the hits of a list of searches, all as the
version 2 store answered them. Every later store must open a copy, migrate
it, and give the same exports and the same searches (SQL-072). Like the
version 1 fossils it is kept forever; the script refuses to overwrite.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shutil
import sys
import tempfile
from pathlib import Path

from convledger import EventDraft
from convledger.sqlite import SqliteStore, schema

SEARCHES = (
    ("conv-alpha", "fossil", None),
    ("conv-alpha", "Köln", None),
    ("conv-alpha", "koln", None),
    ("conv-alpha", "nested", None),
    ("conv-alpha", "before", None),
    ("conv-alpha", "after", None),
    ("ledger-only", "fossil", "all"),
    ("ledger-only", "searchable", "all"),
    ("head-only", "gone", "all"),
    ("runs-only", "fossil", "all"),
)
"""(requester, query, authorize): ``all`` grants every conversation."""


def _draft(number: int, value: object) -> EventDraft:
    return EventDraft(
        event_id=f"fossil-v2-{number:04d}",
        kind="state/set",
        occurred_at=f"2026-02-02T00:00:{number:02d}Z",
        payload={"actor": "fossil", "name": "note", "value": value, "version": 1},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fossils"))
    args = parser.parse_args()
    out: Path = args.out
    target = out / "v2-ledger.sqlite"
    if target.exists() or (out / "v2-manifest.json").exists():
        print(f"{target} exists; fossils are kept forever", file=sys.stderr)
        return 2
    if schema.LATEST_VERSION != 2:
        print("run this with a store that writes schema version 2", file=sys.stderr)
        return 2
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    counter = itertools.count(1)
    prefix, digits = manifest["eventIdPrefix"], manifest["eventIdDigits"]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "v2-ledger.sqlite"
        shutil.copyfile(out / "v1-runtime.sqlite", path)
        store = SqliteStore(path, clock=lambda: manifest["migratedAt"],
                            new_event_id=lambda: f"{prefix}{next(counter):0{digits}d}")
        assert store.outcome == "migrated"
        numbers = itertools.count(1)
        store.append("conv-alpha", [
            _draft(next(numbers), "a fossil note from Köln"),
            _draft(next(numbers), {"z": "last member", "a": ["nested fossil", 7, {"k": "deep"}]}),
            _draft(next(numbers), "before\x00after the NUL"),
        ])
        store.append("ledger-only", [
            _draft(next(numbers), f"searchable fossil number {n}") for n in range(5)
        ])
        store.append("head-only", [_draft(next(numbers), "gone with the purge")])
        assert store.purge("head-only").value == "purged"
        conversations = ("conv-alpha", "ledger-only", "runs-only", "ünïcødé/会話\x00nul")
        exports = {cid: store.export_conversation(cid).decode("utf-8") for cid in conversations}
        searches = []
        for requester, query, grant in SEARCHES:
            hits = store.search(requester, query,
                                authorize=(lambda _cid: True) if grant else None)
            searches.append({
                "requester": requester, "query": query, "grantAll": grant is not None,
                "hits": [[hit.conversation_id, hit.seq, hit.occurred_at] for hit in hits],
            })
        store.close()
        shutil.copyfile(path, target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    record = {
        "$comment": "A version 2 database (release 0.1.0's schema) and what it must answer "
                    "after any later migration. Kept forever; see scripts/make_v2_fossil.py.",
        "file": target.name,
        "sha256": digest,
        "exports": exports,
        "searches": searches,
        "purged": ["head-only"],
    }
    text = json.dumps(record, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    (out / "v2-manifest.json").write_text(text, "utf-8")
    print(f"wrote {target} ({digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
