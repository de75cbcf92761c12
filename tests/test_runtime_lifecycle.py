"""The fenced and ending transitions on the in-memory store (spec chapter ``transitions.md``).

Checkpoint and operation (TRN-040 .. TRN-044), interrupt and recover
(TRN-050 .. TRN-055), terminal and absorption (TRN-060 .. TRN-066) and compact
(TRN-070 .. TRN-075), one TRN sentence per test, driven through
``store.transition`` with :class:`~test_runtime_rules.Driver`.
"""

from __future__ import annotations

import hashlib

import pytest

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import InvalidInputError, NotFoundError
from convledger.memory import MemoryStore
from convledger.runtime import (
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    MessageStatus,
    Operation,
    Recover,
    Run,
    RunState,
    Status,
    Terminal,
    Transition,
)
from convledger.runtime.records import REASON_STATE, RESERVED_REASONS, Head
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState
from convledger.runtime.transitions import validate
from test_runtime_rules import AT, Driver, expect_unchanged, export, running

# -- checkpoint and operation (TRN-040 .. TRN-044) -------------------------------------------


def test_checkpoint_records_summary_never_the_draft() -> None:
    """TRN-041/TRN-043: the event holds sha256/parts/bytes of the draft; the message the draft."""
    d = Driver()
    running(d, 1)
    body: dict[str, JsonValue] = {"parts": [{"t": "é"}, {"t": "x"}], "status": "streaming",
                                  "id": "d1", "extra": [1, 2.5]}
    outcome = d.checkpoint("r1", body)
    encoded = canonical.encode(body)
    summary = {"id": "d1", "status": "streaming", "sha256": hashlib.sha256(encoded).hexdigest(),
               "parts": 2, "bytes": len(encoded)}
    assert outcome.event is not None
    assert outcome.event.payload == {"type": "checkpoint", "input": {
        "runId": "r1", "owner": "w1", "revision": 1, "fencingToken": 1, "draft": summary}}
    assert b"extra" not in outcome.event.canonical_bytes()
    run = d.run("r1")
    assert run.checkpoint is not None and run.checkpoint.to_json() == summary
    assert run.revision == 2 and run.fencing_token == 1
    answer = d.message("a1")
    assert answer.status is MessageStatus.DRAFT and answer.content == body
    assert answer.draft is not None and answer.draft.to_json() == summary
    for envelope in d.store.read("c1").items:
        assert b"extra" not in envelope.canonical_bytes()


def test_checkpoint_draft_with_empty_status_is_allowed() -> None:
    """TRN-042: the draft's status is a string, which may be empty."""
    d = Driver()
    running(d, 1)
    outcome = d.checkpoint("r1", {"id": "d", "status": "", "parts": []})
    assert outcome.status is Status.APPLIED
    assert d.run("r1").checkpoint is not None


@pytest.mark.parametrize(
    "body",
    [
        {"status": "s", "parts": []},
        {"id": "", "status": "s", "parts": []},
        {"id": 1, "status": "s", "parts": []},
        {"id": "d", "parts": []},
        {"id": "d", "status": None, "parts": []},
        {"id": "d", "status": "s"},
        {"id": "d", "status": "s", "parts": {}},
    ],
)
def test_malformed_draft_is_invalid_input(body: dict[str, JsonValue]) -> None:
    """TRN-042: a draft without non-empty string id, string status and array parts is refused."""
    d = Driver()
    running(d, 1)
    before = export(d)
    with pytest.raises(InvalidInputError):
        d(Checkpoint("r1", d.fence("r1"), body))
    assert export(d) == before


def stale_fences(fence: Fence) -> list[Fence]:
    """Fences that differ from ``fence`` in exactly one member."""
    return [
        Fence("intruder", fence.revision, fence.fencing_token),
        Fence(fence.owner, fence.revision - 1, fence.fencing_token),
        Fence(fence.owner, fence.revision + 1, fence.fencing_token),
        Fence(fence.owner, fence.revision, fence.fencing_token - 1),
        Fence(fence.owner, fence.revision, fence.fencing_token + 1),
    ]


@pytest.mark.parametrize("kind", ["checkpoint", "operation", "terminal"])
def test_stale_or_foreign_fence_conflicts(kind: str) -> None:
    """TRN-040/TRN-060: foreign owner, stale revision or stale token conflicts; nothing written."""
    d = Driver()
    running(d, 1)
    d(Recover("r1", d.run("r1").revision, "requeue", {"replaySafe": True}))
    d.acquire("r1", "w1")  # same owner again, token 2: an old token-1 view is stale
    body: dict[str, JsonValue] = {"id": "d", "status": "s", "parts": []}
    for fence in stale_fences(d.fence("r1")):
        step: Transition = {
            "checkpoint": Checkpoint("r1", fence, body),
            "operation": Operation("r1", fence, {"name": "tool"}),
            "terminal": Terminal("r1", fence, "success", {}),
        }[kind]
        before = export(d)
        outcome = d(step)
        expect_unchanged(d, outcome, Status.CONFLICT, before)
        assert outcome.version == 4


@pytest.mark.parametrize("state", ["queued", "terminal"])
def test_fenced_transition_on_unowned_run_conflicts(state: str) -> None:
    """TRN-040: a queued or terminal run has no fence that holds."""
    d = Driver()
    running(d, 1)
    fence = d.fence("r1")
    if state == "queued":
        d(Recover("r1", fence.revision, "requeue", {"replaySafe": True}))
        fence = Fence("w1", fence.revision + 1, fence.fencing_token)
    else:
        d.finish("r1")
        fence = Fence("w1", fence.revision + 1, fence.fencing_token)
    assert d.run("r1").revision == fence.revision
    for step in (Checkpoint("r1", fence, {"id": "d", "status": "s", "parts": []}),
                 Operation("r1", fence, {}), Terminal("r1", fence, "success", {})):
        before = export(d)
        expect_unchanged(d, d(step), Status.CONFLICT, before)


def test_fenced_transitions_hold_while_interrupt_requested() -> None:
    """TRN-040: the owner still checkpoints, operates and ends an interrupt_requested run."""
    d = Driver()
    running(d, 1)
    d(Interrupt("r1"))
    assert d.checkpoint("r1").status is Status.APPLIED
    assert d(Operation("r1", d.fence("r1"), {"n": 1})).status is Status.APPLIED
    assert d.finish("r1", "interrupted").run.state is RunState.INTERRUPTED


def test_operation_sets_last_operation_and_revision_only() -> None:
    """TRN-044: an operation changes lastOperation and revision and nothing else."""
    d = Driver()
    running(d, 1)
    d.checkpoint("r1")
    before = d.run("r1")
    messages = d.companion()["messages"]
    outcome = d(Operation("r1", d.fence("r1"), {"name": "search", "args": [1]}))
    after = d.run("r1")
    assert after.last_operation == {"name": "search", "args": [1]}
    assert after.to_json() | {"lastOperation": None, "revision": 0, "updatedAt": ""} == (
        before.to_json() | {"lastOperation": None, "revision": 0, "updatedAt": ""})
    assert after.revision == before.revision + 1 and outcome.run == after
    assert d.companion()["messages"] == messages


# -- interrupt and recover (TRN-050 .. TRN-055) ----------------------------------------------


def test_interrupt_of_queued_run_ends_it() -> None:
    """TRN-050: a queued run becomes interrupted with reason interrupted, revision +1."""
    d = Driver()
    d.accept(1)
    outcome = d(Interrupt("r1"))
    run = d.run("r1")
    assert outcome.status is Status.APPLIED and outcome.run == run
    assert (run.state, run.reason, run.revision, run.owner) == (
        RunState.INTERRUPTED, "interrupted", 1, None)
    assert d.store.list_active_runs("c1") == ()


def test_interrupt_of_running_run_requests_and_keeps_owner() -> None:
    """TRN-050/TRN-051: running -> interrupt_requested (owner kept); again is a duplicate."""
    d = Driver()
    running(d, 1)
    outcome = d(Interrupt("r1"))
    run = d.run("r1")
    assert (run.state, run.owner, run.revision, run.reason) == (
        RunState.INTERRUPT_REQUESTED, "w1", 2, None)
    before = export(d)
    again = d(Interrupt("r1"))
    expect_unchanged(d, again, Status.DUPLICATE, before)
    assert again.run == run and outcome.version == 3 and again.version == 3


def test_interrupt_of_terminal_run_conflicts() -> None:
    """TRN-051: an interrupt of a terminal run is a conflict."""
    d = Driver()
    d.accept(1)
    d(Interrupt("r1"))
    before = export(d)
    expect_unchanged(d, d(Interrupt("r1")), Status.CONFLICT, before)


def test_interrupt_of_requeued_run_fails_its_placed_answer() -> None:
    """TRN-050/TRN-018: a requeued (placed) run ended by interrupt leaves its answer failed."""
    d = Driver()
    running(d, 1)
    d.checkpoint("r1")
    d(Recover("r1", d.run("r1").revision, "requeue", {"replaySafe": True}))
    d(Interrupt("r1"))
    answer = d.message("a1")
    assert d.run("r1").state is RunState.INTERRUPTED
    assert (answer.status, answer.content, answer.draft) == (MessageStatus.FAILED, None, None)


@pytest.mark.parametrize("evidence", [{}, {"replaySafe": 1}, {"replaySafe": "true"},
                                      {"replaySafe": False}, {"replaySafe": [True]}])
def test_requeue_needs_replay_safe_true(evidence: dict[str, JsonValue]) -> None:
    """TRN-054: requeue without evidence.replaySafe === true is invalid_input."""
    d = Driver()
    running(d, 1)
    before = export(d)
    with pytest.raises(InvalidInputError):
        d(Recover("r1", d.run("r1").revision, "requeue", evidence))
    assert export(d) == before


def test_requeue_keeps_token_placement_checkpoint_and_messages() -> None:
    """TRN-054: requeue -> queued, no owner, revision +1; token, placed, checkpoint kept."""
    d = Driver()
    running(d, 1)
    d.checkpoint("r1")
    before = d.run("r1")
    messages = d.companion()["messages"]
    d(Recover("r1", before.revision, "requeue", {"replaySafe": True, "note": "x"}))
    after = d.run("r1")
    assert (after.state, after.owner, after.revision) == (
        RunState.QUEUED, None, before.revision + 1)
    assert (after.fencing_token, after.placed, after.checkpoint) == (
        before.fencing_token, True, before.checkpoint)
    assert d.companion()["messages"] == messages


def test_abandon_fails_run_and_answer_in_one_event() -> None:
    """TRN-055: abandoned run, owner null, revision +1, answer failed with no content or draft."""
    d = Driver()
    running(d, 1)
    d.checkpoint("r1")
    events = d.events()
    outcome = d(Recover("r1", d.run("r1").revision, "abandon", {}))
    run = d.run("r1")
    assert (run.state, run.reason, run.owner, run.revision) == (
        RunState.ABANDONED, "abandoned", None, 3)
    answer = d.message("a1")
    assert (answer.status, answer.content, answer.draft) == (MessageStatus.FAILED, None, None)
    assert d.events() == events + 1 and outcome.run == run


def test_recover_conflicts_on_stale_revision_or_unowned_run() -> None:
    """TRN-053: recover needs an owned run at the input's revision, else conflict."""
    d = Driver()
    running(d, 1)
    revision = d.run("r1").revision
    for stale in (revision - 1, revision + 1):
        before = export(d)
        expect_unchanged(d, d(Recover("r1", stale, "abandon", {})), Status.CONFLICT, before)
    d.accept(2)
    before = export(d)
    expect_unchanged(d, d(Recover("r2", 0, "abandon", {})), Status.CONFLICT, before)
    d.finish("r1")
    before = export(d)
    expect_unchanged(d, d(Recover("r1", revision + 1, "abandon", {})), Status.CONFLICT, before)


def test_recover_of_interrupt_requested_run_applies() -> None:
    """TRN-053: an interrupt_requested run can be recovered."""
    d = Driver()
    running(d, 1)
    d(Interrupt("r1"))
    outcome = d(Recover("r1", d.run("r1").revision, "requeue", {"replaySafe": True}))
    assert outcome.status is Status.APPLIED and d.run("r1").state is RunState.QUEUED


# -- terminal and absorption (TRN-060 .. TRN-066) --------------------------------------------


@pytest.mark.parametrize("reason", sorted(set(REASON_STATE) - RESERVED_REASONS))
def test_terminal_sets_state_by_the_reason_table(reason: str) -> None:
    """TRN-063: state by the table, reason, policy, owner null, revision +1, answer final."""
    d = Driver()
    running(d, 1)
    d.checkpoint("r1")
    before = d.run("r1")
    outcome = d.finish("r1", reason)
    run = d.run("r1")
    assert (run.state, run.reason, run.owner, run.revision) == (
        REASON_STATE[reason], reason, None, before.revision + 1)
    assert run.policy == ("p1" if reason == "policy_stop" else None)
    assert run.absorbed_into_run_id is None and outcome.run == run
    answer = d.message("a1")
    assert (answer.status, answer.content, answer.draft) == (
        MessageStatus.FINAL, {"text": "answer of r1"}, None)
    assert run.checkpoint == before.checkpoint


@pytest.mark.parametrize("reason", sorted(RESERVED_REASONS))
def test_terminal_refuses_reserved_reasons(reason: str) -> None:
    """TRN-061: absorbed and abandoned are set only by absorption and recover."""
    d = Driver()
    running(d, 1)
    with pytest.raises(InvalidInputError) as raised:
        d(Terminal("r1", d.fence("r1"), reason, {}))
    assert raised.value.requirement == "TRN-061"


@pytest.mark.parametrize(("reason", "policy"), [("policy_stop", None), ("policy_stop", ""),
                                                ("success", "p"), ("timeout", "")])
def test_terminal_policy_exactly_with_policy_stop(reason: str, policy: str | None) -> None:
    """TRN-062: a non-empty policy exactly when the reason is policy_stop."""
    d = Driver()
    running(d, 1)
    before = export(d)
    with pytest.raises(InvalidInputError):
        d(Terminal("r1", d.fence("r1"), reason, {}, policy=policy))
    assert export(d) == before


def test_terminal_absorbs_later_fresh_queued_runs_atomically() -> None:
    """TRN-065/TRN-066: absorbed runs become superseded/absorbed under the one event."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    d.accept(3)  # coalesced into r2
    events = d.events()
    outcome = d.finish("r1", absorb=("r2",))
    absorbed = d.run("r2")
    assert (absorbed.state, absorbed.reason, absorbed.absorbed_into_run_id, absorbed.revision) == (
        RunState.SUPERSEDED, "absorbed", "r1", 2)
    assert absorbed.placed is False and absorbed.owner is None
    assert d.events() == events + 1 and outcome.version == d.version()
    assert outcome.event is not None and outcome.event.payload["input"]["absorbRunIds"] == ["r2"]
    assert [m[1] for m in d.history()] == ["in1", "a1"]
    assert d.store.list_active_runs("c1") == ()


@pytest.mark.parametrize("absorb", [("r1",), ("r2", "r2")])
def test_absorb_repeating_or_self_is_invalid_input(absorb: tuple[str, ...]) -> None:
    """TRN-064: absorbRunIds that repeats an id or names the terminating run is invalid_input."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    with pytest.raises(InvalidInputError) as raised:
        d(Terminal("r1", d.fence("r1"), "success", {}, absorb_run_ids=absorb))
    assert raised.value.requirement == "TRN-064"


def test_absorb_unknown_run_is_not_found_before_fence_conflict() -> None:
    """TRN-064/TRN-009: an unknown absorbed id is not_found, even with a stale fence."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    other = Driver(d.store, "c2")
    other.accept(9)
    for fence in (d.fence("r1"), stale_fences(d.fence("r1"))[0]):
        before = export(d)
        outcome = d(Terminal("r1", fence, "success", {}, absorb_run_ids=("r2", "r9")))
        expect_unchanged(d, outcome, Status.NOT_FOUND, before)


def test_absorb_of_unabsorbable_run_conflicts() -> None:
    """TRN-064/TRN-065: absorbing a terminal run conflicts; a later fresh queued run is absorbed."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    d.finish("r1")
    d.acquire("r2")
    d.accept(3)
    d(Interrupt("r3"))  # terminal
    d.accept(4)
    d.accept(5)  # coalesced into r4
    # r1 terminal (earlier), r3 terminal, r4 queued fresh
    for target in ("r1", "r3"):
        before = export(d)
        outcome = d(Terminal("r2", d.fence("r2"), "success", {}, absorb_run_ids=(target,)))
        expect_unchanged(d, outcome, Status.CONFLICT, before)
    assert d.finish("r2", absorb=("r4",)).status is Status.APPLIED
    assert d.run("r4").input_ids == ("in4", "in5")


def hand_run(run_id: str, ordinal: int, state: RunState, *, token: int) -> Run:
    """A sound run record built by hand, for states transitions cannot reach together."""
    owned = state in (RunState.RUNNING, RunState.INTERRUPT_REQUESTED)
    return Run(
        run_id=run_id, conversation_id="c1", ordinal=ordinal, state=state, reason=None,
        policy=None, owner="w1" if owned else None, revision=token, fencing_token=token,
        input_ids=(f"in-{run_id}",), assistant_message_id=f"a-{run_id}", placed=token > 0,
        checkpoint=None, last_operation=None, absorbed_into_run_id=None, created_at=AT,
        updated_at=AT,
    )


@pytest.mark.parametrize(
    "target",
    [
        hand_run("later-taken", 3, RunState.QUEUED, token=1),  # queued again after an acquire
        hand_run("earlier", 1, RunState.QUEUED, token=0),  # fresh but earlier in causal order
    ],
)
def test_absorb_of_ever_acquired_or_earlier_run_conflicts(target: Run) -> None:
    """TRN-064: absorbing a run ever acquired or earlier than the terminating one conflicts."""
    state = RuntimeState("c1")
    state.head_record = Head("c1", 5)
    ending = hand_run("ending", 2, RunState.RUNNING, token=1)
    state.put(ending)
    state.put(target)
    fence = Fence("w1", ending.revision, ending.fencing_token)
    step = validate(Terminal("ending", fence, "success", {}, absorb_run_ids=(target.run_id,)))
    decision = decide(state, "c1", step, AT)
    assert (decision.status, decision.version, decision.writes) == (Status.CONFLICT, 5, ())


def test_terminal_of_terminal_run_conflicts() -> None:
    """TRN-012/TRN-060: a terminal run never changes again; a repeated terminal conflicts."""
    d = Driver()
    running(d, 1)
    fence = d.fence("r1")
    d(Terminal("r1", fence, "success", {"x": 1}))
    before = export(d)
    expect_unchanged(d, d(Terminal("r1", fence, "success", {"x": 1})), Status.CONFLICT, before)
    after_fence = Fence("w1", fence.revision + 1, fence.fencing_token)
    expect_unchanged(d, d(Terminal("r1", after_fence, "success", {})), Status.CONFLICT, before)


# -- compact (TRN-070 .. TRN-075) --------------------------------------------------------------


def compacted_setup() -> Driver:
    """r1 answered (in1 a1), r2 answered (in2 a2), r3 running (in3 a3)."""
    d = Driver()
    for n in (1, 2):
        running(d, n)
        d.finish(f"r{n}")
    running(d, 3)
    return d


def test_compact_replaces_range_with_summary_below_lowest_position() -> None:
    """TRN-074/TRN-075: range inactive, summary at lowest-1, no run changes, run is None."""
    d = compacted_setup()
    runs = [d.run(r) for r in ("r1", "r2", "r3")]
    outcome = d(Compact(d.version(), "in1", "a2", "s1", {"text": "sum"}))
    assert outcome.status is Status.APPLIED and outcome.run is None
    assert d.history() == [(0, "s1", "summary", "final"), (5, "in3", "user", "final"),
                           (6, "a3", "assistant", "pending")]
    summary = d.message("s1")
    assert (summary.run_id, summary.content, summary.active) == (None, {"text": "sum"}, True)
    assert [d.run(r) for r in ("r1", "r2", "r3")] == runs
    assert not d.message("a2").active and d.message("a2").status is MessageStatus.FINAL
    d(Compact(d.version(), "s1", "s1", "s2", {"text": "again"}))
    assert d.history()[0] == (-1, "s2", "summary", "final")


def test_compact_with_stale_version_conflicts_with_actual_version() -> None:
    """TRN-071/TRN-001: expectedVersion other than the head's is a conflict carrying the version."""
    d = compacted_setup()
    for expected in (0, d.version() - 1, d.version() + 1):
        before = export(d)
        outcome = d(Compact(expected, "in1", "a1", "s1", {}))
        expect_unchanged(d, outcome, Status.CONFLICT, before)
        assert outcome.version == 8


def test_compact_conflict_comes_before_range_refusal() -> None:
    """TRN-009: a stale version is a conflict even when the range is invalid."""
    d = compacted_setup()
    before = export(d)
    expect_unchanged(d, d(Compact(1, "nope", "nope", "s1", {})), Status.CONFLICT, before)


@pytest.mark.parametrize(
    ("first", "last", "summary_id", "requirement"),
    [
        ("in2", "a2", "s1", "TRN-072"),  # not the first active message
        ("missing", "a2", "s1", "TRN-072"),
        ("in1", "missing", "s1", "TRN-072"),
        ("a1", "in1", "s1", "TRN-072"),  # not the first
        ("in1", "in3", "s1", "TRN-072"),  # reaches an active run
        ("in1", "a3", "s1", "TRN-072"),
        ("in1", "a1", "in3", "TRN-073"),  # summary id reserved: a message
        ("in1", "a1", "a1", "TRN-073"),
        ("in1", "a1", "in9", "TRN-073"),  # admitted input, not yet placed
        ("in1", "a1", "a9", "TRN-073"),  # answer id of a queued run
    ],
)
def test_compact_range_and_summary_id_rules(
    first: str, last: str, summary_id: str, requirement: str
) -> None:
    """TRN-072/TRN-073: exact range from the first active message, no active run, new id."""
    d = compacted_setup()
    d.accept(9)
    before = export(d)
    with pytest.raises(InvalidInputError) as raised:
        d(Compact(d.version(), first, last, summary_id, {}))
    assert raised.value.requirement == requirement
    assert export(d) == before


def test_compact_range_ending_before_first_is_invalid() -> None:
    """TRN-072: lastMessageId at a lower position than firstMessageId is invalid_input."""
    d = compacted_setup()
    d(Compact(d.version(), "in1", "a1", "s1", {}))
    d(Compact(d.version(), "s1", "s1", "s2", {}))
    before = export(d)
    with pytest.raises(InvalidInputError):  # s1 is inactive now, in2 is after s2
        d(Compact(d.version(), "s2", "s1", "s3", {}))
    assert export(d) == before


def test_compacted_message_cannot_start_a_range() -> None:
    """TRN-072: an inactive message is not the first active message."""
    d = compacted_setup()
    d(Compact(d.version(), "in1", "a1", "s1", {}))
    before = export(d)
    with pytest.raises(InvalidInputError):
        d(Compact(d.version(), "in1", "a2", "s2", {}))
    assert export(d) == before


def test_compact_with_expected_version_zero_and_no_head_is_not_found() -> None:
    """TRN-070: expectedVersion 0 is a valid input; without a head the outcome is not_found."""
    d = Driver()
    outcome = d(Compact(0, "m1", "m1", "s", {}))
    assert (outcome.status, outcome.version) == (Status.NOT_FOUND, 0)


def test_reads_are_refused_not_found_or_empty_without_head() -> None:
    """TRN-081/TRN-082: no head: load_snapshot not_found, list_active_runs empty, load_run none."""
    store = MemoryStore()
    with pytest.raises(NotFoundError):
        store.load_snapshot("c1")
    assert store.list_active_runs("c1") == () and store.load_run("c1", "r1") is None
