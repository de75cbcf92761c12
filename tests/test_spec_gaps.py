"""Issue 16's spec gaps, on the reference side: values written in the spec, rules reachable.

* WIR-006: the spec version ``hello`` answers is written in the spec itself,
  and equals ``convledger.SPEC_VERSION``, the suite's and the Node server's;
* the ledger chapter lists every rule of another chapter that binds
  ``append`` (point 6): a rule outside ``ledger.md`` that names appending is
  either in that list or recorded below as one that only *uses* append;
* the order of refusals of an append (ERR-010) on every append path of the
  reference, the SQLite transaction scope included (which skipped TRN-108).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import convledger
from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_conformance import requirements

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
RULE = re.compile(r"^- \*\*([A-Z]+-\d+)\*\* (.*)$", re.MULTILINE)
APPENDING = re.compile(r"\bappend", re.IGNORECASE)

USES_APPEND: dict[str, str] = {
    "ARC-014": "export's snapshot against a concurrent append (binds export)",
    "FCT-001": "the host appends state/set through append", "FCT-010": "host schedules",
    "FCT-011": "host schedules", "FCT-012": "host schedules", "FCT-013": "host schedules",
    "FCT-014": "host schedules", "FCT-030": "host sandbox probes",
    "PGS-045": "write_fact_rows appends its events",
    "PGS-067": "put_spill and delete_spill append their events",
    "PRV-001": "the runtime's provider events",
    "PRV-010": "the runtime's provider events", "PRV-012": "the runtime's retry events",
    "SPL-001": "put_spill appends its event", "SPL-030": "delete_spill appends its event",
    "SPL-031": "delete_spill appends nothing when refused",
    "SQL-031": "the migration writes runtime/baseline", "SQL-068": "write_fact_rows",
    "TRN-001": "a transition's outcome", "TRN-002": "a transition appends its event",
    "TRN-006": "the payload of a transition's event",
    "TRN-110": "spill writes and import_bundle of a purged conversation",
}
"""Rules that name appending but bind another operation, each with why."""


def test_the_spec_version_is_written_in_wire_md() -> None:
    """WIR-006 names the value; the reference, the suite and the TypeScript kit hold it."""
    text = (SPEC / "wire.md").read_text(encoding="utf-8")
    (rule,) = [body for rule_id, body in RULE.findall(text) if rule_id == "WIR-006"]
    written = re.search(r'the text `"([^"`]+)"`', rule)
    assert written is not None, rule
    kit = (ROOT / "interop" / "typescript" / "src" / "server.ts").read_text(encoding="utf-8")
    node_version = re.search(r"export const SPEC_VERSION = '([^']+)';", kit)
    assert node_version is not None
    assert written.group(1) == convledger.SPEC_VERSION == requirements.SPEC_VERSION
    assert node_version.group(1) == convledger.SPEC_VERSION


def _listed_in_ledger() -> set[str]:
    text = (SPEC / "ledger.md").read_text(encoding="utf-8")
    section = text.split("## Rules of other chapters that bind `append`", 1)[1].split("\n## ", 1)[0]
    listed: set[str] = set()
    for first, last in re.findall(r"([A-Z]+-\d+)(?: \.\. ([A-Z]+-\d+))?", section):
        if not last:
            listed.add(first)
            continue
        prefix, low, high = first[:4], int(first[4:]), int(last[4:])
        listed.update(f"{prefix}{n:03d}" for n in range(low, high + 1))
    return listed


def test_every_rule_binding_append_is_reachable_from_the_ledger_chapter() -> None:
    """Point 6: a rule of another chapter naming appending is listed in ledger.md or used-only."""
    listed = _listed_in_ledger()
    ids = {rule_id for rule_id, _ in RULE.findall(
        "\n".join(p.read_text(encoding="utf-8") for p in SPEC.glob("*.md")))}
    assert listed <= ids, f"ledger.md lists ids no chapter defines: {sorted(listed - ids)}"
    missed = []
    for path in sorted(SPEC.glob("*.md")):
        if path.name in ("ledger.md", "README.md"):
            continue
        for rule_id, body in RULE.findall(path.read_text(encoding="utf-8")):
            if APPENDING.search(body) and rule_id not in listed and rule_id not in USES_APPEND:
                missed.append(f"{rule_id} ({path.name}): {body[:80]}")
    assert not missed, "rules binding append that ledger.md does not list:\n" + "\n".join(missed)
    assert not set(USES_APPEND) & listed, "an id is both listed and recorded as a mere use"
    assert {"TRN-108", "TRN-092", "SPL-008", "KND-002", "ERR-010"} <= listed


def _draft(event_id: str, kind: str = "state/set") -> EventDraft:
    payload: object = {"name": "n", "version": 1, "value": 1, "actor": "a"}
    if kind != "state/set":
        payload = {"type": "accept"}
    return EventDraft(event_id=event_id, kind=kind, occurred_at="2026-01-01T00:00:00Z",
                      payload=payload)  # type: ignore[arg-type]


CASES = [
    ("bad expected head, eventId twice", [_draft("x"), _draft("x")], "1", "invalid_input"),
    ("runtime kind, eventId twice", [_draft("y", "runtime/transition"), _draft("y")], None,
     "invalid_input"),
    ("eventId twice, stale head", [_draft("z"), _draft("z")], 7, "duplicate"),
    ("stale head, stored eventId", [_draft("stored")], 7, "conflict"),
]


def _kind(call: object) -> str:
    try:
        call()  # type: ignore[operator]
    except LedgerError as error:
        return error.kind
    return "accepted"


@pytest.mark.parametrize(("what", "batch", "head", "kind"), CASES, ids=[c[0] for c in CASES])
def test_append_precedence_on_every_path(
    tmp_path: Path, what: str, batch: list[EventDraft], head: object, kind: str
) -> None:
    """ERR-010 on MemoryStore, SqliteStore and the SQLite transaction scope."""
    memory = MemoryStore()
    sqlite = SqliteStore(tmp_path / "s.db")
    try:
        for store in (memory, sqlite):
            store.append("c", [_draft("stored")])
            assert _kind(lambda s=store: s.append("c", batch, expected_head=head)) == kind, what
        with sqlite.write_transaction() as scope:
            assert _kind(lambda: scope.append("c", batch, expected_head=head)) == kind, what
        assert sqlite.head("c") == memory.head("c") == 1
    finally:
        memory.close()
        sqlite.close()
