"""The transition rules on the in-memory store, rule by rule (spec chapter ``transitions.md``).

Each test drives :class:`MemoryStore` through ``store.transition`` and checks
one TRN sentence: the outcome, the version it carries, the records it wrote
and the event it appended. :class:`Driver` is shared with the other
``test_runtime_*`` modules.
"""

from __future__ import annotations

import pytest

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import InvalidInputError, NotFoundError
from convledger.memory import MemoryStore
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Message,
    MessageStatus,
    Operation,
    Outcome,
    Recover,
    Run,
    RunState,
    Status,
    Terminal,
    Transition,
)

AT = "2026-11-29T10:00:00Z"


class Driver:
    """One conversation on one store, with numbered event ids and helpers to read it back."""

    def __init__(self, store: MemoryStore | None = None, conversation_id: str = "c1") -> None:
        self.store = MemoryStore() if store is None else store
        self.conversation_id = conversation_id
        self.count = 0

    def __call__(
        self, transition: Transition, *, at: str = AT, event_id: str | None = None
    ) -> Outcome:
        """Apply ``transition`` with a fresh event id."""
        self.count += 1
        chosen = f"{self.conversation_id}-e{self.count}" if event_id is None else event_id
        return self.store.transition(
            self.conversation_id, transition, event_id=chosen, occurred_at=at
        )

    def accept(self, n: int | str, *, key: str | None = None) -> Outcome:
        """Accept input ``in{n}`` under key ``k{n}``, proposing run ``r{n}`` and answer ``a{n}``."""
        return self(Accept(key or f"k{n}", f"in{n}", f"r{n}", f"a{n}", {"text": f"input {n}"}))

    def run(self, run_id: str) -> Run:
        """The stored run (it must exist)."""
        run = self.store.load_run(self.conversation_id, run_id)
        assert run is not None
        return run

    def fence(self, run_id: str) -> Fence:
        """The fence the run's current owner holds."""
        run = self.run(run_id)
        assert run.owner is not None
        return Fence(run.owner, run.revision, run.fencing_token)

    def acquire(self, run_id: str, owner: str = "w1") -> Outcome:
        """Acquire ``run_id`` for ``owner``."""
        return self(Acquire(run_id, owner))

    def checkpoint(self, run_id: str, draft: dict[str, JsonValue] | None = None) -> Outcome:
        """Checkpoint ``run_id`` with the current fence."""
        body = draft or {"id": "d", "status": "streaming", "parts": [{"text": "so far"}]}
        return self(Checkpoint(run_id, self.fence(run_id), body))

    def finish(self, run_id: str, reason: str = "success", **more: object) -> Outcome:
        """End ``run_id`` with the current fence."""
        policy = "p1" if reason == "policy_stop" else None
        absorbed = more.get("absorb", ())
        assert isinstance(absorbed, tuple)
        return self(
            Terminal(run_id, self.fence(run_id), reason, {"text": f"answer of {run_id}"},
                     policy=policy, absorb_run_ids=absorbed)
        )

    def history(self) -> list[tuple[int, str, str, str]]:
        """(position, messageId, role, status) of the active messages."""
        snapshot = self.store.load_snapshot(self.conversation_id)
        return [
            (m.position, m.message_id, m.role.value, m.status.value) for m in snapshot.messages
        ]

    def message(self, message_id: str) -> Message:
        """The stored message, active or not (read from the export's runtime companion)."""
        for item in self.companion()["messages"]:
            if isinstance(item, dict) and item["messageId"] == message_id:
                return Message.from_json(item)
        raise AssertionError(f"no message {message_id}")

    def companion(self) -> dict[str, JsonValue]:
        """The export's ``runtime`` companion: every stored record (TRN-103)."""
        document = canonical.decode(self.store.export_conversation(self.conversation_id))
        assert isinstance(document, dict)
        companions = document["companions"]
        assert isinstance(companions, dict)
        runtime = companions["runtime"]
        assert isinstance(runtime, dict)
        return runtime

    def version(self) -> int:
        """The head version (0 without a head)."""
        try:
            return self.store.load_snapshot(self.conversation_id).head.version
        except NotFoundError:
            return 0

    def events(self) -> int:
        """The ledger head seq."""
        return self.store.head(self.conversation_id)


def running(d: Driver, n: int = 1, owner: str = "w1") -> Run:
    """Accept input ``n`` and acquire its run; return the running run."""
    d.accept(n)
    outcome = d.acquire(f"r{n}", owner)
    assert outcome.status is Status.APPLIED and outcome.run is not None
    return outcome.run


def expect_unchanged(d: Driver, outcome: Outcome, status: Status, before: bytes) -> None:
    """``outcome`` has ``status``, carries the actual version, and nothing was written."""
    assert outcome.status is status
    assert outcome.event is None
    assert outcome.version == d.version()
    assert d.store.export_conversation(d.conversation_id) == before


def export(d: Driver) -> bytes:
    """The conversation's archive bytes."""
    return d.store.export_conversation(d.conversation_id)


# -- general rules (TRN-001 .. TRN-009) ----------------------------------------------------


def test_applied_outcome_carries_version_run_and_event() -> None:
    """TRN-001/TRN-002: applied has the new version, the run and a runtime/transition event."""
    d = Driver()
    outcome = d.accept(1)
    assert outcome.status is Status.APPLIED and outcome.version == 1
    assert outcome.run is not None and outcome.run.run_id == "r1"
    assert outcome.event is not None
    assert outcome.event.kind == "runtime/transition" and outcome.event.schema_version == 1
    assert outcome.event.seq == 1 and outcome.event.ignorable is False
    assert outcome.event.event_id == "c1-e1" and outcome.event.occurred_at == AT
    assert "ignorable" not in outcome.event.to_wire()


def test_each_applied_transition_raises_version_by_one_and_appends_one_event() -> None:
    """TRN-002/TRN-003/TRN-010: version counts applied transitions; one event each."""
    d = Driver()
    outcomes = [d.accept(1), d.acquire("r1"), d.checkpoint("r1"), d.finish("r1")]
    assert [o.version for o in outcomes] == [1, 2, 3, 4]
    assert [o.event.seq for o in outcomes if o.event] == [1, 2, 3, 4]
    assert d.events() == 4


def test_event_seq_follows_plain_events_of_the_conversation() -> None:
    """TRN-002: the transition's event takes the next seq after events appended before."""
    from conftest import draft

    d = Driver()
    d.store.append("c1", [draft("plain1"), draft("plain2")])
    outcome = d.accept(1)
    assert outcome.event is not None and outcome.event.seq == 3 and outcome.version == 1


def test_payload_is_type_and_recorded_input() -> None:
    """TRN-006: the payload is {type, input} with the recorded input of the call."""
    d = Driver()
    outcome = d.accept(1)
    assert outcome.event is not None
    assert outcome.event.payload == {
        "type": "accept",
        "input": {"idempotencyKey": "k1", "inputId": "in1", "runId": "r1",
                  "assistantMessageId": "a1", "message": {"text": "input 1"}},
    }
    d.acquire("r1")
    terminal = d(Terminal("r1", d.fence("r1"), "policy_stop", {"t": 1}, policy="pol"))
    assert terminal.event is not None
    assert terminal.event.payload == {
        "type": "terminal",
        "input": {"runId": "r1", "owner": "w1", "revision": 1, "fencingToken": 1,
                  "reason": "policy_stop", "policy": "pol", "message": {"t": 1},
                  "absorbRunIds": []},
    }


@pytest.mark.parametrize(
    ("transition", "name"),
    [
        (Acquire("r1", "w"), "acquire"),
        (Checkpoint("r1", Fence("w", 0, 0), {"id": "d", "status": "s", "parts": []}), "checkpoint"),
        (Operation("r1", Fence("w", 0, 0), {}), "operation"),
        (Interrupt("r1"), "interrupt"),
        (Recover("r1", 0, "abandon", {}), "recover"),
        (Terminal("r1", Fence("w", 0, 0), "success", {}), "terminal"),
        (Compact(0, "m1", "m2", "s", {}), "compact"),
    ],
)
def test_every_type_but_accept_is_not_found_without_head(transition: Transition, name: str) -> None:
    """TRN-001/TRN-070: without a head every type but accept answers not_found at version 0."""
    d = Driver()
    outcome = d(transition)
    assert (outcome.status, outcome.version, outcome.event) == (Status.NOT_FOUND, 0, None)
    assert d.events() == 0 and transition.type == name


def test_unknown_run_is_not_found_even_when_another_conversation_has_it() -> None:
    """TRN-001/TRN-080: a run of another conversation is not found here."""
    other = Driver(conversation_id="c2")
    mine = Driver(other.store, "c1")
    other.accept(1)
    mine.accept(2)
    before = export(mine)
    outcome = mine.acquire("r1")
    expect_unchanged(mine, outcome, Status.NOT_FOUND, before)
    assert outcome.version == 1
    assert mine.store.load_run("c1", "r1") is None and mine.store.load_run("c2", "r1") is not None


@pytest.mark.parametrize(
    ("event_id", "occurred_at"),
    [("", AT), ("ok", "yesterday"), ("ok", "2026-11-29 10:00:00Z"), ("ok", "")],
)
def test_bad_event_identity_is_invalid_input_whatever_the_outcome(
    event_id: str, occurred_at: str
) -> None:
    """TRN-005: a bad eventId or occurredAt is invalid_input, even where not_found."""
    store = MemoryStore()
    with pytest.raises(InvalidInputError):
        store.transition("c1", Acquire("r1", "w"), event_id=event_id, occurred_at=occurred_at)
    with pytest.raises(InvalidInputError):
        store.transition("c1", Accept("k", "i", "r", "a", {}), event_id=event_id,
                         occurred_at=occurred_at)
    assert store.head("c1") == 0


def test_event_carries_callers_occurred_at_as_record_times() -> None:
    """TRN-005/TRN-019: the event and the records carry the caller's occurredAt text exactly."""
    d = Driver()
    d.accept(1)
    outcome = d(Acquire("r1", "w1"), at="2026-11-29T11:00:00.5+01:00")
    assert outcome.event is not None and outcome.event.occurred_at == "2026-11-29T11:00:00.5+01:00"
    run = d.run("r1")
    assert (run.created_at, run.updated_at) == (AT, "2026-11-29T11:00:00.5+01:00")
    assert d.message("in1").created_at == "2026-11-29T11:00:00.5+01:00"
    admission = d.companion()["admissions"][0]
    assert admission["admittedAt"] == AT


@pytest.mark.parametrize(
    "transition",
    [
        Accept("", "i", "r", "a", {}),
        Accept("k", "i", "r", "a", "not an object"),
        Accept("k", "i", "r", "a", {"x": float("nan")}),
        Acquire("r1", ""),
        Acquire(7, "w"),
        Checkpoint("r1", Fence("w", -1, 0), {"id": "d", "status": "s", "parts": []}),
        Checkpoint("r1", Fence("w", 0, True), {"id": "d", "status": "s", "parts": []}),
        Checkpoint("r1", Fence("w", 0, 2**53), {"id": "d", "status": "s", "parts": []}),
        Checkpoint("r1", ("w", 0, 0), {"id": "d", "status": "s", "parts": []}),
        Operation("r1", Fence("", 0, 0), {}),
        Operation("r1", Fence("w", 0, 0), []),
        Interrupt(""),
        Recover("r1", 0, "restart", {}),
        Recover("r1", -1, "abandon", {}),
        Recover("r1", 0, "abandon", None),
        Terminal("r1", Fence("w", 0, 0), "bored", {}),
        Terminal("r1", Fence("w", 0, 0), "success", {}, absorb_run_ids=["r2"]),
        Terminal("r1", Fence("w", 0, 0), "success", {}, absorb_run_ids=("",)),
        Compact(-1, "m1", "m2", "s", {}),
        Compact(1, "", "m2", "s", {}),
        Compact(1, "m1", "m2", "s", "summary"),
        "accept",
    ],
)
def test_malformed_call_is_invalid_input_before_anything_is_read(transition: Transition) -> None:
    """TRN-007/TRN-009: a call wrong in itself is invalid_input, even with no head."""
    store = MemoryStore()
    with pytest.raises(InvalidInputError):
        store.transition("c1", transition, event_id="e1", occurred_at=AT)
    assert store.head("c1") == 0


def test_duplicate_event_id_of_an_applying_transition_is_refused() -> None:
    """TRN-008: an applying transition reusing a stored eventId is refused duplicate."""
    from convledger.errors import DuplicateError

    d = Driver()
    d.accept(1)
    other = Driver(d.store, "c2")
    before = export(d)
    with pytest.raises(DuplicateError):
        other(Accept("k", "i", "r", "a", {}), event_id="c1-e1")
    with pytest.raises(DuplicateError):
        d(Acquire("r1", "w"), event_id="c1-e1")
    assert export(d) == before and other.store.head("c2") == 0
    assert d.run("r1").state is RunState.QUEUED


def test_non_applying_transition_with_stored_event_id_answers_its_outcome() -> None:
    """TRN-008/TRN-009: the duplicate-eventId refusal is only for a transition that would apply."""
    d = Driver()
    d.accept(1)
    before = export(d)
    outcome = d(Interrupt("nope"), event_id="c1-e1")
    expect_unchanged(d, outcome, Status.NOT_FOUND, before)
    duplicate = d(Accept("k1", "x", "y", "z", {}), event_id="c1-e1")
    expect_unchanged(d, duplicate, Status.DUPLICATE, before)


# -- accept (TRN-020 .. TRN-025) ------------------------------------------------------------


def test_first_accept_creates_head_run_and_admission_and_places_nothing() -> None:
    """TRN-020/TRN-024/TRN-025: a new run, an admission, the head at 1 and no message."""
    d = Driver()
    outcome = d.accept(1)
    assert outcome.admitted is not None
    assert (outcome.admitted.input_id, outcome.admitted.run_id,
            outcome.admitted.assistant_message_id) == ("in1", "r1", "a1")
    run = d.run("r1")
    assert (run.state, run.ordinal, run.revision, run.fencing_token, run.input_ids) == (
        RunState.QUEUED, 1, 0, 0, ("in1",))
    assert run.owner is None and run.placed is False and run.checkpoint is None
    assert d.history() == [] and d.companion()["messages"] == []
    assert d.companion()["admissions"] == [{
        "conversationId": "c1", "idempotencyKey": "k1", "inputId": "in1", "runId": "r1",
        "assistantMessageId": "a1", "ordinal": 1, "admittedAt": AT,
        "message": {"text": "input 1"},
    }]
    assert d.companion()["head"] == {"conversationId": "c1", "version": 1}


def test_accept_coalesces_into_never_acquired_queued_newest_run() -> None:
    """TRN-023: the input joins the queued run; the proposed run and answer ids stay unused."""
    d = Driver()
    d.accept(1)
    outcome = d.accept(2)
    assert outcome.admitted is not None
    assert (outcome.admitted.input_id, outcome.admitted.run_id,
            outcome.admitted.assistant_message_id) == ("in2", "r1", "a1")
    run = d.run("r1")
    assert run.input_ids == ("in1", "in2") and run.revision == 1
    assert d.store.load_run("c1", "r2") is None
    admissions = d.companion()["admissions"]
    assert isinstance(admissions, list)
    assert [(a["ordinal"], a["runId"], a["assistantMessageId"]) for a in admissions
            ] == [(1, "r1", "a1"), (2, "r1", "a1")]
    assert outcome.run == run


def test_accept_does_not_coalesce_into_running_or_requeued_run() -> None:
    """TRN-023/TRN-024: a run that was ever acquired takes no more inputs; a new run is made."""
    d = Driver()
    running(d, 1)
    assert d.accept(2).admitted.run_id == "r2"
    d.finish("r1")
    d.acquire("r2")
    d(Recover("r2", d.run("r2").revision, "requeue", {"replaySafe": True}))
    requeued = d.run("r2")
    assert requeued.state is RunState.QUEUED and requeued.fencing_token == 1
    outcome = d.accept(3)
    assert outcome.admitted is not None and outcome.admitted.run_id == "r3"
    assert d.run("r3").ordinal == 3 and d.run("r2").input_ids == ("in2",)


def test_accept_coalesces_only_into_newest_active_run() -> None:
    """TRN-023: a queued fresh run that is not the newest active one gets no input."""
    d = Driver()
    running(d, 1)
    d.accept(2)  # r2 queued, fresh
    d.finish("r1")
    d.acquire("r2")
    d.accept(3)  # r3 queued fresh, newest
    assert d.accept(4).admitted.run_id == "r3"
    d(Interrupt("r3"))  # r3 ends; newest active is r2, running
    outcome = d.accept(5)
    assert outcome.admitted is not None and outcome.admitted.run_id == "r5"
    assert d.run("r5").ordinal == 4


def test_new_run_ordinal_counts_terminal_runs_too() -> None:
    """TRN-017/TRN-024: a new run's ordinal is one more than the greatest of the conversation."""
    d = Driver()
    d.accept(1)
    d(Interrupt("r1"))
    d.accept(2)
    assert d.run("r2").ordinal == 2


@pytest.mark.parametrize("stage", ["queued", "coalesced", "terminal", "absorbed", "compacted"])
def test_known_key_answers_duplicate_with_original_ids_forever(stage: str) -> None:
    """TRN-021: a known key answers duplicate with its original ids, even with other members."""
    d = Driver()
    d.accept(1)
    d.accept(2)  # coalesced into r1
    if stage in ("terminal", "absorbed", "compacted"):
        d.acquire("r1")
        d.accept(3)
        d.accept(4)  # coalesced into r3
        d.finish("r1", absorb=("r3",) if stage == "absorbed" else ())
    if stage == "compacted":
        d(Compact(d.version(), "in1", "a1", "sum", {"text": "summary"}))
        assert [m[1] for m in d.history()] == ["sum"]
    before = export(d)
    expected = {"k1": ("in1", "r1", "a1"), "k2": ("in2", "r1", "a1")}
    if stage != "queued" and stage != "coalesced":
        expected.update({"k3": ("in3", "r3", "a3"), "k4": ("in4", "r3", "a3")})
    for key, ids in expected.items():
        outcome = d(Accept(key, "other-in", "other-run", "other-answer", {"different": True}))
        expect_unchanged(d, outcome, Status.DUPLICATE, before)
        assert outcome.admitted is not None
        assert (outcome.admitted.input_id, outcome.admitted.run_id,
                outcome.admitted.assistant_message_id) == ids


def test_known_key_with_clashing_ids_is_still_a_duplicate() -> None:
    """TRN-021/TRN-022: identity rules apply to a new key only; a known key is a duplicate."""
    d = Driver()
    d.accept(1)
    before = export(d)
    outcome = d(Accept("k1", "same", "same", "same", {}))
    expect_unchanged(d, outcome, Status.DUPLICATE, before)
    assert outcome.admitted is not None and outcome.admitted.input_id == "in1"


@pytest.mark.parametrize(
    "accept",
    [
        Accept("new", "x", "x", "y", {}),
        Accept("new", "x", "y", "x", {}),
        Accept("new", "y", "x", "x", {}),
        Accept("new", "in1", "rX", "aX", {}),  # an admitted input
        Accept("new", "a1", "rX", "aX", {}),  # a run's answer
        Accept("new", "iX", "rX", "in2", {}),  # an admitted (coalesced) input as answer id
        Accept("new", "iX", "rX", "a1", {}),  # a run's answer as answer id
        Accept("new", "sum", "rX", "aX", {}),  # a summary message
        Accept("new", "iX", "r1", "aX", {}),  # an existing run id
        Accept("new", "iX", "r2", "aX", {}),  # a terminal run id
    ],
)
def test_new_key_with_reserved_or_clashing_ids_is_invalid_input(accept: Accept) -> None:
    """TRN-022: distinct ids, unreserved message ids, a new run id, else invalid_input."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    d(Interrupt("r2"))
    d.finish("r1")
    d(Compact(d.version(), "in1", "a1", "sum", {"text": "s"}))
    d.accept(3)  # coalescing target exists: the refusal must not depend on it
    before = export(d)
    with pytest.raises(InvalidInputError) as raised:
        d(accept)
    assert raised.value.requirement == "TRN-022"
    assert export(d) == before


def test_accept_may_reuse_a_run_id_as_input_of_another_conversation() -> None:
    """TRN-022/TRN-080: reserved ids are per conversation."""
    d = Driver()
    d.accept(1)
    other = Driver(d.store, "c2")
    assert other.accept(1).status is Status.APPLIED


# -- acquire (TRN-030 .. TRN-034) ------------------------------------------------------------


def test_acquire_places_inputs_then_answer_and_sets_owner() -> None:
    """TRN-032/TRN-033: inputs in order then the pending answer; running, owner, +1 and +1."""
    d = Driver()
    d.accept(1)
    d.accept(2)
    outcome = d.acquire("r1", "w9")
    run = outcome.run
    assert run is not None and run == d.run("r1")
    assert (run.state, run.owner, run.revision, run.fencing_token, run.placed) == (
        RunState.RUNNING, "w9", 2, 1, True)
    assert d.history() == [(1, "in1", "user", "final"), (2, "in2", "user", "final"),
                           (3, "a1", "assistant", "pending")]
    assert d.message("in2").content == {"text": "input 2"}
    assert d.message("a1").content is None and d.message("a1").run_id == "r1"
    assert d.message("in1").run_id == "r1"


def test_acquire_of_non_queued_run_conflicts() -> None:
    """TRN-030: running, interrupt_requested and terminal runs cannot be acquired."""
    d = Driver()
    running(d, 1)
    for step in (None, Interrupt("r1")):
        if step is not None:
            d(step)
        before = export(d)
        expect_unchanged(d, d.acquire("r1", "w2"), Status.CONFLICT, before)
    d.finish("r1", "cancelled")
    before = export(d)
    expect_unchanged(d, d.acquire("r1", "w2"), Status.CONFLICT, before)


def test_acquire_conflicts_while_another_run_is_owned_or_earlier_queued() -> None:
    """TRN-031: causal order: an owned run or an earlier queued run blocks acquire."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    before = export(d)
    outcome = d.acquire("r2")
    expect_unchanged(d, outcome, Status.CONFLICT, before)
    assert outcome.version == 3
    d(Interrupt("r1"))  # interrupt_requested still blocks
    before = export(d)
    expect_unchanged(d, d.acquire("r2"), Status.CONFLICT, before)
    d(Recover("r1", d.run("r1").revision, "requeue", {"replaySafe": True}))
    before = export(d)  # r1 queued again, lower ordinal: r2 must wait
    expect_unchanged(d, d.acquire("r2"), Status.CONFLICT, before)
    assert d.acquire("r1").status is Status.APPLIED


def test_reacquire_after_requeue_places_nothing_and_bumps_token() -> None:
    """TRN-032/TRN-033/TRN-054: a later acquire places nothing; the token grows again."""
    d = Driver()
    running(d, 1)
    d.checkpoint("r1")
    before_history = d.history()
    d(Recover("r1", d.run("r1").revision, "requeue", {"replaySafe": True}))
    outcome = d.acquire("r1", "w2")
    assert outcome.run is not None
    assert (outcome.run.fencing_token, outcome.run.owner, outcome.run.placed) == (2, "w2", True)
    assert d.history() == before_history
    assert outcome.event is not None and d.message("a1").status is MessageStatus.DRAFT


def test_successor_input_admitted_while_predecessor_runs_is_placed_after_its_answer() -> None:
    """TRN-034: the successor's inputs come after the predecessor's answer in history."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    d.accept(3)
    assert d.history() == [(1, "in1", "user", "final"), (2, "a1", "assistant", "pending")]
    d.finish("r1")
    d.acquire("r2")
    assert d.history() == [
        (1, "in1", "user", "final"), (2, "a1", "assistant", "final"),
        (3, "in2", "user", "final"), (4, "in3", "user", "final"),
        (5, "a2", "assistant", "pending"),
    ]


def test_placement_follows_greatest_position_ever_used_after_compaction() -> None:
    """TRN-032/TRN-074: placement continues after the greatest position, below it the summary."""
    d = Driver()
    running(d, 1)
    d.finish("r1")
    d(Compact(d.version(), "in1", "a1", "s1", {"text": "s"}))
    running(d, 2)
    assert d.history() == [(0, "s1", "summary", "final"), (3, "in2", "user", "final"),
                           (4, "a2", "assistant", "pending")]


def test_run_ended_before_acquire_places_nothing() -> None:
    """TRN-034/TRN-065: an interrupted queued run or an absorbed run never places messages."""
    d = Driver()
    running(d, 1)
    d.accept(2)
    d.finish("r1", absorb=("r2",))
    d.accept(3)
    d(Interrupt("r3"))
    ids = [m["messageId"] for m in d.companion()["messages"]]
    assert ids == ["in1", "a1"]
    assert not d.run("r2").placed and not d.run("r3").placed
