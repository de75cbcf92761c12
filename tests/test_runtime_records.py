"""The runtime records and their wire form (spec ``transitions.md``, TRN-010 .. TRN-019).

``to_json``/``from_json`` are exact inverses for every record type, and
``from_json`` refuses every malformed variant with :class:`IntegrityError`
(TRN-011). The reason -> state table is the spec's table (TRN-013).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from convledger.errors import IntegrityError
from convledger.runtime import (
    REASON_STATE,
    Admission,
    Compact,
    DraftSummary,
    Head,
    Message,
    MessageRole,
    MessageStatus,
    Recover,
    Run,
    RunState,
    RuntimeState,
)
from convledger.runtime.records import (
    ACTIVE_STATES,
    OWNED_STATES,
    RESERVED_REASONS,
    run_problems,
)
from test_runtime_rules import Driver, running

SPEC = Path(__file__).resolve().parents[1] / "spec" / "transitions.md"
RecordType = type[Head] | type[Run] | type[Admission] | type[Message] | type[DraftSummary]


def full_state() -> RuntimeState:
    """A stored state with every record type and every message status, read from an export."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    d.finish("r1", "policy_stop", absorb=("r2",))
    running(d, 3)
    d.checkpoint("r3")
    d(Recover("r3", d.run("r3").revision, "abandon", {}))
    running(d, 4)
    d.checkpoint("r4")
    d(Compact(d.version(), "in1", "a1", "sum", {"text": "s"}))
    return RuntimeState.from_json("c1", d.companion())


def pending_state() -> RuntimeState:
    """A state whose running run's answer is still pending (no checkpoint yet)."""
    d = Driver()
    running(d, 1)
    return RuntimeState.from_json("c1", d.companion())


STATE = full_state()
PENDING = pending_state()
SAMPLES: list[tuple[RecordType, dict[str, Any]]] = [
    (Head, STATE.to_json()["head"]),
    *((Run, run.to_json()) for run in STATE.runs.values()),
    *((Admission, a.to_json()) for a in STATE.admissions.values()),
    *((Message, m.to_json()) for m in STATE.messages.values()),
    *((Message, m.to_json()) for m in PENDING.messages.values()),
    *((DraftSummary, r.checkpoint.to_json()) for r in STATE.runs.values() if r.checkpoint),
]


def test_samples_cover_every_record_variant() -> None:
    """The samples hold every record type, terminal run kinds and every message status."""
    kinds = {kind for kind, _ in SAMPLES}
    assert kinds == {Head, Run, Admission, Message, DraftSummary}
    statuses = {m.status for m in [*STATE.messages.values(), *PENDING.messages.values()]}
    assert statuses == set(MessageStatus)
    assert {m.role for m in STATE.messages.values()} == set(MessageRole)
    reasons = {r.reason for r in STATE.runs.values()}
    assert {"policy_stop", "absorbed", "abandoned", None} <= reasons
    assert any(not m.active for m in STATE.messages.values())


@pytest.mark.parametrize(("kind", "wire"), SAMPLES)
def test_to_json_and_from_json_are_inverse(kind: RecordType, wire: dict[str, Any]) -> None:
    """TRN-011: from_json(to_json(x)) == x and to_json(from_json(j)) == j."""
    record = kind.from_json(wire)
    assert record.to_json() == wire
    assert kind.from_json(record.to_json()) == record


@pytest.mark.parametrize("state", sorted(RunState, key=lambda s: s.value))
def test_run_in_each_state_round_trips(state: RunState) -> None:
    """TRN-012: a sound run in each of the nine states parses back to itself."""
    wire = sound_run(state)
    assert Run.from_json(wire).to_json() == wire
    assert run_problems(Run.from_json(wire)) == []


def sound_run(state: RunState) -> dict[str, Any]:
    """A sound run record in ``state``."""
    reason = next((r for r, s in REASON_STATE.items() if s is state), None)
    return {
        "runId": "r1", "conversationId": "c1", "ordinal": 1, "state": state.value,
        "reason": reason, "policy": "p" if reason == "policy_stop" else None,
        "owner": "w" if state in OWNED_STATES else None, "revision": 3, "fencingToken": 1,
        "inputIds": ["in1"], "assistantMessageId": "a1", "placed": True,
        "checkpoint": None, "lastOperation": {"n": 1},
        "absorbedIntoRunId": "r0" if reason == "absorbed" else None,
        "createdAt": "t0", "updatedAt": "t1",
    }


def test_non_objects_are_refused() -> None:
    """TRN-011: a record that is not a JSON object is integrity."""
    for kind, _ in SAMPLES:
        for value in (None, [], "x", 1):
            with pytest.raises(IntegrityError):
                kind.from_json(value)


@pytest.mark.parametrize(("kind", "wire"), SAMPLES)
def test_missing_or_extra_member_is_refused(kind: RecordType, wire: dict[str, Any]) -> None:
    """TRN-011: exactly the members of the table; one missing or one extra is integrity."""
    for name in wire:
        broken = {k: v for k, v in wire.items() if k != name}
        with pytest.raises(IntegrityError):
            kind.from_json(broken)
    with pytest.raises(IntegrityError):
        kind.from_json({**wire, "extra": None})


WRONG_VALUES: dict[str, list[Any]] = {
    # ids and times: non-empty strings
    "conversationId": [None, "", 1, ["c"]],
    "runId": [None, "", 1],
    "messageId": [None, "", 1],
    "idempotencyKey": [None, "", 1],
    "inputId": [None, "", 1],
    "assistantMessageId": [None, "", 1],
    "createdAt": [None, "", 1],
    "updatedAt": [None, "", 1],
    "admittedAt": [None, "", 1],
    "id": [None, "", 1],
    "sha256": [None, "", 1],
    # integers
    "version": [None, "1", 1.5, True, -1],
    "ordinal": [None, "1", 1.5, True, 0, -1],
    "revision": [None, "1", 1.5, False, -1],
    "fencingToken": [None, "1", 2.5, True, -1],
    "parts": [None, "1", 1.5, True, -1],
    "bytes": [None, "1", 1.5, True, -1],
    "position": [None, "1", 1.5, True],
    # booleans
    "placed": [None, 0, 1, "true"],
    "active": [None, 0, 1, "true"],
    # arrays and objects
    "inputIds": [None, "in1", [], [""], [1], {"0": "in1"}],
    "message": [None, [], "text", 1],
    "lastOperation": [[], "op", 1],
    "checkpoint": [[], "c", {"id": "d"}],
    "draft": [[], "d", {"id": "d"}],
    # optional strings
    "reason": ["", 1, "bored"],
    "policy": ["", 1],
    "owner": ["", 1],
    "absorbedIntoRunId": ["", 1],
    "runIdOptional": ["", 1],
    "status": [None, 1, "done"],
    "state": [None, 1, "paused", "QUEUED"],
    "role": [None, 1, "system", "USER"],
}


@pytest.mark.parametrize(("kind", "wire"), SAMPLES)
def test_wrong_member_types_are_refused(kind: RecordType, wire: dict[str, Any]) -> None:
    """TRN-011/TRN-012/TRN-018: a member of the wrong type or an unknown enum value is integrity."""
    checked = 0
    for name in wire:
        key = name
        if kind is Message and name == "runId":
            key = "runIdOptional"
        if kind is DraftSummary and name == "status":
            continue  # any string, checked below
        if kind is Message and name == "content":
            continue  # any JSON
        for bad in WRONG_VALUES[key]:
            broken = {**copy.deepcopy(wire), name: bad}
            with pytest.raises(IntegrityError):
                kind.from_json(broken)
            checked += 1
    assert checked > 0


def test_draft_summary_status_is_any_string() -> None:
    """TRN-041/TRN-042: a draft's status is a string, empty allowed; anything else is refused."""
    wire = {"id": "d", "status": "", "sha256": "0" * 64, "parts": 0, "bytes": 2}
    assert DraftSummary.from_json(wire).status == ""
    for bad in (None, 1, [], {}):
        with pytest.raises(IntegrityError):
            DraftSummary.from_json({**wire, "status": bad})


def run_breakers() -> list[tuple[str, dict[str, Any]]]:
    """Runs that each break one invariant of ``run_problems`` (TRN-014 .. TRN-017)."""
    queued = sound_run(RunState.QUEUED)
    running_ = sound_run(RunState.RUNNING)
    done = sound_run(RunState.COMPLETED)
    return [
        ("active with a reason", {**queued, "reason": "success"}),
        ("terminal without a reason", {**done, "reason": None}),
        ("reason leads elsewhere", {**done, "reason": "timeout"}),
        ("absorbed but failed", {**sound_run(RunState.FAILED), "reason": "absorbed",
                                 "absorbedIntoRunId": "r0"}),
        ("policy without policy_stop", {**done, "policy": "p"}),
        ("policy_stop without policy", {**done, "reason": "policy_stop", "policy": None}),
        ("absorbed without target", {**sound_run(RunState.SUPERSEDED), "reason": "absorbed",
                                     "absorbedIntoRunId": None}),
        ("absorbed into itself", {**sound_run(RunState.SUPERSEDED), "reason": "absorbed",
                                  "absorbedIntoRunId": "r1"}),
        ("target without absorbed", {**sound_run(RunState.SUPERSEDED), "reason": "superseded",
                                     "absorbedIntoRunId": "r0"}),
        ("owner while queued", {**queued, "owner": "w"}),
        ("owner while terminal", {**done, "owner": "w"}),
        ("no owner while running", {**running_, "owner": None}),
        ("no owner while interrupt_requested",
         {**sound_run(RunState.INTERRUPT_REQUESTED), "owner": None}),
        ("no inputs", {**queued, "inputIds": []}),
        ("placed before acquire", {**queued, "fencingToken": 0, "placed": True}),
    ]


@pytest.mark.parametrize(("why", "wire"), run_breakers(), ids=[w for w, _ in run_breakers()])
def test_run_invariants_are_refused(why: str, wire: dict[str, Any]) -> None:
    """TRN-013 .. TRN-017: a run breaking an invariant is integrity, and run_problems names it."""
    with pytest.raises(IntegrityError):
        Run.from_json(wire)
    unchecked = Run(
        run_id=wire["runId"], conversation_id=wire["conversationId"], ordinal=wire["ordinal"],
        state=RunState(wire["state"]), reason=wire["reason"], policy=wire["policy"],
        owner=wire["owner"], revision=wire["revision"], fencing_token=wire["fencingToken"],
        input_ids=tuple(wire["inputIds"]), assistant_message_id=wire["assistantMessageId"],
        placed=wire["placed"], checkpoint=None, last_operation=wire["lastOperation"],
        absorbed_into_run_id=wire["absorbedIntoRunId"], created_at=wire["createdAt"],
        updated_at=wire["updatedAt"],
    )
    assert run_problems(unchecked), why


@pytest.mark.parametrize(
    "status", [MessageStatus.PENDING, MessageStatus.FINAL, MessageStatus.FAILED]
)
def test_message_draft_summary_only_while_draft(status: MessageStatus) -> None:
    """TRN-018: draft is non-null exactly in status draft."""
    draft_message = next(m for m in STATE.messages.values() if m.status is MessageStatus.DRAFT)
    wire = draft_message.to_json()
    with pytest.raises(IntegrityError):
        Message.from_json({**wire, "status": status.value})
    other = next(m for m in STATE.messages.values() if m.draft is None)
    with pytest.raises(IntegrityError):
        Message.from_json({**other.to_json(), "status": "draft"})


def spec_reason_table() -> dict[str, str]:
    """The reason -> state table of ``spec/transitions.md``, parsed from its markdown."""
    text = SPEC.read_text(encoding="utf-8")
    start = text.index("| reason | state |")
    table: dict[str, str] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        reasons, state = (cell.strip() for cell in line.strip("|").split("|"))
        for reason in re.findall(r"`([a-z_]+)`", reasons):
            table[reason] = state.strip("`")
    return table


def test_reason_table_matches_the_spec() -> None:
    """TRN-013: REASON_STATE is exactly the spec's reason -> state table."""
    table = spec_reason_table()
    assert len(table) == 15
    assert {reason: state.value for reason, state in REASON_STATE.items()} == table


def test_reason_table_is_total_over_terminal_states() -> None:
    """TRN-012/TRN-013: every terminal state is reached by some reason, no active one is."""
    reached = set(REASON_STATE.values())
    assert reached == set(RunState) - ACTIVE_STATES
    assert {RunState.QUEUED, RunState.RUNNING, RunState.INTERRUPT_REQUESTED} == ACTIVE_STATES
    assert {RunState.RUNNING, RunState.INTERRUPT_REQUESTED} == OWNED_STATES
    assert {state.value for state in RunState} == {
        "queued", "running", "interrupt_requested", "completed", "interrupted", "superseded",
        "failed", "cancelled", "abandoned"}
    assert {"absorbed", "abandoned"} == RESERVED_REASONS


def test_state_json_round_trips_through_from_json() -> None:
    """TRN-103: a whole state parses back to the same canonical form."""
    again = RuntimeState.from_json("c1", STATE.to_json())
    assert again.to_json() == STATE.to_json()


def test_state_from_json_refuses_foreign_and_repeated_records() -> None:
    """TRN-103: a state naming another conversation or repeating an identity is integrity."""
    with pytest.raises(IntegrityError):
        RuntimeState.from_json("c2", STATE.to_json())
    doubled = STATE.to_json()
    runs = doubled["runs"]
    assert isinstance(runs, list)
    runs.append(runs[0])
    with pytest.raises(IntegrityError):
        RuntimeState.from_json("c1", doubled)
    for missing in ("head", "runs", "admissions", "messages"):
        partial = {k: v for k, v in STATE.to_json().items() if k != missing}
        with pytest.raises(IntegrityError):
            RuntimeState.from_json("c1", partial)
    with pytest.raises(IntegrityError):
        RuntimeState.from_json("c1", {**STATE.to_json(), "runs": {}})
