"""Transitions right after each other, in every legal order (TRN-013 .. TRN-075, issue 37).

The state machines draw transitions at random and so may never draw a given
pair of consecutive transitions (an accept right after a requeue, a recover
right after an absorbing terminal, ...). This check derives the pairs instead
of hoping for them: :data:`STEPS` builds one transition of each kind from the
oracle's state (:class:`~.model.RuntimeModel`, the reference rules of chapter
TRN), one step kind or more for every type of
:data:`convledger.runtime.transitions.TRANSITION_TYPES`, and :func:`pair_paths`
explores the oracle from an empty conversation, breadth first, to find for
every pair (a, b) of step kinds that the rules apply one right after the
other the shortest sequence of steps that ends with a then b. The check
replays every such sequence in a conversation of its own and compares each
outcome, and then every run, the snapshot (head, active runs and every message
of the history) and the active runs with the oracle's.

After the last step of each sequence it also sends, to every run of the
conversation, the transitions the rules do *not* apply there (:func:`probes`:
an interrupt of an ended or absorbed run, a recover of a run nobody owns or
with a stale revision, an acquire of a run that is not queued), and expects
the oracle's ``conflict`` or ``duplicate`` and no change (TRN-004, TRN-012):
a store that applies one of them after a rare pair (an interrupt right after
an absorbing terminal, a recover naming revision 0) is caught there, since the
pairs themselves are made of applied steps only (issue 37, blind round 4).

A failure names the pair, the steps before it, the transition, and what was
expected and what came back.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Final

from convledger.errors import LedgerError
from convledger.interface import require
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Interrupt,
    Operation,
    Recover,
    Run,
    RuntimeState,
    Status,
    Terminal,
    Transition,
)
from convledger.runtime.state import snapshot_of
from convledger.runtime.store import TransitionStore
from convledger.runtime.transitions import TRANSITION_TYPES
from convledger.store import LedgerStore
from convledger_conformance.differences import first_difference
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_transitions import TRANSITIONS, fence_of
from convledger_conformance.runtime.model import RuntimeModel, decision_json, outcome_json
from convledger_conformance.support import STAMP, fail, fresh_store

IDS: Final = ("TRN-004", "TRN-012", "TRN-013", "TRN-020", "TRN-023", "TRN-024", "TRN-030",
              "TRN-031", "TRN-033", "TRN-040", "TRN-043", "TRN-044", "TRN-050", "TRN-051",
              "TRN-053", "TRN-054", "TRN-055", "TRN-063", "TRN-065", "TRN-072", "TRN-075")

Build = Callable[[RuntimeState, int], Transition | None]


def _runs(state: RuntimeState) -> list[Run]:
    return sorted(state.runs.values(), key=lambda run: run.ordinal)


def _owned(state: RuntimeState) -> Run | None:
    return next((run for run in _runs(state) if run.state.owned), None)


def _queued(state: RuntimeState) -> Run | None:
    return next((run for run in _runs(state) if run.state.value == "queued"), None)


def _accept(_: RuntimeState, n: int) -> Transition:
    return Accept(f"k{n}", f"in-{n}", f"run-{n}", f"answer-{n}", {"text": f"input {n}"})


def _acquire(state: RuntimeState, _: int) -> Transition | None:
    run = _queued(state)
    return None if run is None else Acquire(run.run_id, "owner")


def _fenced(make: Callable[[Run, int], Transition]) -> Build:
    def build(state: RuntimeState, n: int) -> Transition | None:
        run = _owned(state)
        return None if run is None else make(run, n)
    return build


def _interrupt(pick: Callable[[RuntimeState], Run | None]) -> Build:
    def build(state: RuntimeState, _: int) -> Transition | None:
        run = pick(state)
        return None if run is None else Interrupt(run.run_id)
    return build


def _absorbing(run: Run, n: int, state: RuntimeState) -> Transition | None:
    later = tuple(other.run_id for other in _runs(state)
                  if other.state.value == "queued" and other.ordinal > run.ordinal)
    if not later:
        return None
    return Terminal(run.run_id, fence_of(run), "success", {"text": f"both {n}"},
                    absorb_run_ids=later)


def _terminal_absorb(state: RuntimeState, n: int) -> Transition | None:
    run = _owned(state)
    return None if run is None else _absorbing(run, n, state)


def _compact(state: RuntimeState, n: int) -> Transition | None:
    head = state.head()
    active = {run.run_id for run in state.active_runs()}
    history = [message for message in state.history() if message.active]
    closed: list[str] = []
    for message in history:
        if message.run_id in active:
            break
        closed.append(message.message_id)
    if head is None or not closed:
        return None
    return Compact(head.version, closed[0], closed[-1], f"summary-{n}", {"text": f"sum {n}"})


STEPS: Final[dict[str, tuple[type[Transition], Build]]] = {
    "accept": (Accept, _accept),
    "acquire": (Acquire, _acquire),
    "checkpoint": (Checkpoint, _fenced(lambda run, n: Checkpoint(
        run.run_id, fence_of(run), {"id": run.assistant_message_id, "status": "draft",
                                    "parts": [{"text": f"draft {n}"}]}))),
    "operation": (Operation, _fenced(lambda run, n: Operation(
        run.run_id, fence_of(run), {"tool": f"tool-{n}"}))),
    "interrupt queued": (Interrupt, _interrupt(_queued)),
    "interrupt running": (Interrupt, _interrupt(_owned)),
    "recover requeue": (Recover, _fenced(lambda run, n: Recover(
        run.run_id, run.revision, "requeue", {"replaySafe": True}))),
    "recover abandon": (Recover, _fenced(lambda run, n: Recover(
        run.run_id, run.revision, "abandon", {"why": "gone"}))),
    "terminal": (Terminal, _fenced(lambda run, n: Terminal(
        run.run_id, fence_of(run), "success", {"text": f"done {n}"}))),
    "terminal absorbing": (Terminal, _terminal_absorb),
    "compact": (Compact, _compact),
}
"""Every step kind: the transition type it sends and how it is built from the oracle's state
(``None`` when the state offers nothing to send it to)."""

DEPTH: Final = 8
"""How many steps the exploration goes deep: every pair the rules allow is reached by then."""


def uncovered_types() -> list[str]:
    """Every transition type of the reference that no step kind sends (it must be empty)."""
    sent = {kind for kind, _ in STEPS.values()}
    return [kind.type for kind in TRANSITION_TYPES if kind not in sent]


def _signature(state: RuntimeState) -> tuple[object, ...]:
    runs = tuple((run.state.value, run.fencing_token > 0, len(run.input_ids))
                 for run in _runs(state))
    messages = sum(1 for message in state.messages.values() if message.active)
    return runs, messages


def _step(model: RuntimeModel, conversation: str, name: str, n: int) -> bool:
    """Send step ``name`` to the oracle; whether the rules applied it."""
    transition = STEPS[name][1](model.state(conversation), n)
    if transition is None:
        return False
    expected = model.expect(conversation, transition, f"e-{n}", STAMP)
    if expected.decision is None or expected.decision.status is not Status.APPLIED:
        return False
    # RuntimeModel.commit without the ledger's canonical bytes, which the exploration never
    # reads (expect reads the records and the event ids): two thirds of its time went there
    assert expected.draft is not None
    model.states.setdefault(conversation, RuntimeState(conversation)).apply(expected.decision)
    model.event_ids[expected.draft.event_id] = conversation
    return True


def _clone(model: RuntimeModel) -> RuntimeModel:
    twin = RuntimeModel(registry=model.registry)
    twin.states = {key: state.copy() for key, state in model.states.items()}
    twin.event_ids = dict(model.event_ids)
    return twin


@cache
def pair_paths() -> dict[tuple[str, str], tuple[str, ...]]:
    """For every pair of step kinds the rules apply one right after the other, the shortest
    sequence of applied steps ending with that pair (breadth first from an empty conversation,
    one path kept per state and last step)."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    seen: set[tuple[tuple[object, ...], str]] = set()
    frontier: list[tuple[tuple[str, ...], RuntimeModel]] = [((), RuntimeModel())]
    for _ in range(DEPTH):
        following: list[tuple[tuple[str, ...], RuntimeModel]] = []
        for path, model in frontier:
            for name in STEPS:
                extended, twin = (*path, name), _clone(model)
                if not _step(twin, "x", name, len(extended)):
                    continue
                if path:
                    found.setdefault((path[-1], name), extended)
                key = (_signature(twin.state("x")), name)
                if key not in seen:
                    seen.add(key)
                    following.append((extended, twin))
        frontier = following
    return found


def probes(state: RuntimeState) -> list[Transition]:
    """Transitions to every run of ``state`` that the rules refuse or find done there: an
    interrupt of any run, an acquire of any run, a recover (both actions) at the run's revision
    and at a stale one (0, or one more when the run is at 0), and a compact of the whole active
    history; the caller keeps those the oracle does not apply (TRN-030, TRN-051, TRN-053,
    TRN-072)."""
    found: list[Transition] = []
    for run in _runs(state):
        stale = run.revision + 1 if run.revision == 0 else 0
        found += [Interrupt(run.run_id), Acquire(run.run_id, "probe-owner")]
        for revision in (run.revision, stale):
            found += [Recover(run.run_id, revision, "abandon", {"why": "probe"}),
                      Recover(run.run_id, revision, "requeue", {"replaySafe": True})]
    head = state.head()
    history = [message for message in state.history() if message.active]
    if head is not None and history:  # TRN-072: refused while it covers an active run's message
        found.append(Compact(head.version, history[0].message_id, history[-1].message_id,
                             "probe-summary", {"text": "probe"}))
    return found


def _probe(runtime: TransitionStore, model: RuntimeModel, conversation: str,
           path: tuple[str, ...], pair: tuple[str, str]) -> None:
    """Send every probe the oracle does not apply after ``path``; each must answer as the
    oracle does and change nothing (TRN-004)."""
    for number, transition in enumerate(probes(model.state(conversation)), start=1):
        event_id = f"{conversation}-probe-{number}"
        expected = model.expect(conversation, transition, event_id, STAMP)
        if expected.decision is not None and expected.decision.status is Status.APPLIED:
            continue
        try:
            outcome = runtime.transition(conversation, transition, event_id=event_id,
                                         occurred_at=STAMP)
        except LedgerError as error:
            if error.kind == expected.error:
                continue
            fail(IDS, f"{_describe(pair, path)}, then {transition!r}: expected "
                      f"{expected.error or expected.decision}, got refused {error.kind}: "
                      f"{error}")
        if expected.decision is None:
            fail(IDS, f"{_describe(pair, path)}, then {transition!r}: expected refused "
                      f"{expected.error}, got {outcome_json(outcome)!r:.600}")
        want, got = decision_json(expected.decision, None), outcome_json(outcome)
        if want != got:
            fail(IDS, f"{_describe(pair, path)}, then {transition!r} (not applied by the "
                      f"rules there): expected {want!r:.600}, got {got!r:.600}")


def _describe(pair: tuple[str, str], path: tuple[str, ...], step: int | None = None) -> str:
    """The pair, the steps that reach it and, when given, the step (1-based) that failed."""
    where = "" if step is None else f", at step {step} ({path[step - 1]})"
    return f"{pair[1]} right after {pair[0]} (steps: {', '.join(path)}{where})"


def _judge(store: LedgerStore, model: RuntimeModel, conversation: str, path: tuple[str, ...],
           pair: tuple[str, str]) -> None:
    runtime = require(store, TRANSITIONS)
    for n, name in enumerate(path, start=1):
        transition = STEPS[name][1](model.state(conversation), n)
        assert transition is not None, (pair, path)
        event_id = f"{conversation}-e{n}"
        expected = model.expect(conversation, transition, event_id, STAMP)
        assert expected.decision is not None
        try:
            outcome = runtime.transition(conversation, transition, event_id=event_id,
                                         occurred_at=STAMP)
        except LedgerError as error:
            fail(IDS, f"{_describe(pair, path, n)}: {transition!r} expected "
                      f"{expected.decision.status.value}, got refused {error.kind}: {error}")
        event = None if expected.draft is None else model.event_wire(conversation, expected.draft)
        want, got = decision_json(expected.decision, event), outcome_json(outcome)
        if want != got:
            fail(IDS, f"{_describe(pair, path, n)}: {transition!r} expected {want!r:.600}, "
                      f"got {got!r:.600}")
        model.commit(conversation, expected)
        # after every step, the messages too: a placed answer a transition must fail, say
        changed = first_difference(snapshot_of(model.state(conversation)),
                                   runtime.load_snapshot(conversation), "load_snapshot")
        if changed is not None:
            fail(IDS, f"{_describe(pair, path, n)}: after {transition!r}: {changed}")
    state = model.state(conversation)
    for run in state.runs.values():
        got_run = runtime.load_run(conversation, run.run_id)
        if got_run != run:
            fail(IDS, f"{_describe(pair, path)}: load_run({run.run_id!r}) expected "
                      f"{run.to_json()!r:.600}, got "
                      f"{None if got_run is None else got_run.to_json()!r:.600}")
    want_active = [run.run_id for run in state.active_runs()]
    got_active = [run.run_id for run in runtime.list_active_runs(conversation)]
    if want_active != got_active:
        fail(IDS, f"{_describe(pair, path)}: list_active_runs expected {want_active}, "
                  f"got {got_active}")
    _probe(runtime, model, conversation, path, pair)


@check(*IDS, capability=TRANSITIONS)
def check_transitions_in_every_order(ctx: CheckContext) -> None:
    """TRN-013 .. TRN-075: every pair of consecutive transitions the rules allow, each in a
    conversation of its own, answers and stores what the reference rules say."""
    with fresh_store(ctx) as store:
        model = RuntimeModel()
        for number, (pair, path) in enumerate(sorted(pair_paths().items()), start=1):
            _judge(store, model, f"pair-{number}", path, pair)
