"""Random transition sequences on MemoryStore: the ledger rebuilds the records (TRN-100, TRN-101).

After every call, folding the conversation's ledger from seq 1 gives the
state the store holds (read through the export's ``runtime`` companion,
compared via :func:`comparable`), every draft matches its summary, every run
satisfies :func:`run_problems`, and a call that does not apply writes nothing.
The ``fast`` profile runs a small fixed budget; ``thorough`` searches deeper.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, example, given
from hypothesis import strategies as st

from conftest import draft, memory_state
from convledger import canonical
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.runtime import (
    REASON_STATE,
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    Recover,
    Run,
    RunState,
    RuntimeState,
    Status,
    Terminal,
    Transition,
    comparable,
    rebuild,
)
from convledger.runtime.records import RESERVED_REASONS, run_problems
from convledger.runtime.state import draft_problems
from test_runtime_rules import Driver

REASONS = sorted(set(REASON_STATE) - RESERVED_REASONS)
OPS = ("accept", "acquire", "checkpoint", "operation", "interrupt", "recover", "terminal",
       "compact")
commands = st.tuples(st.sampled_from((*OPS, "accept", "acquire", "terminal", "terminal")),
                     st.integers(0, 15), st.integers(0, 3))
"""(type, a, b): ``a`` picks among records, ``b`` picks a variant (stale, foreign, absorb)."""


def stored(d: Driver) -> RuntimeState | None:
    """The state the store holds, read from the export's runtime companion."""
    try:
        runtime = d.companion()
    except (LedgerError, KeyError):
        return None
    return RuntimeState.from_json(d.conversation_id, runtime)


def ledger(d: Driver) -> list[Envelope]:
    """The conversation's whole ledger, page by page."""
    events: list[Envelope] = []
    start = 1
    while True:
        page = d.store.read(d.conversation_id, from_seq=start)
        events.extend(page.items)
        if page.next_seq is None:
            return events
        start = page.next_seq


def build(d: Driver, state: RuntimeState | None, command: tuple[str, int, int]) -> Transition:
    """The transition ``command`` names, aimed at the current records so most calls matter."""
    op, a, b = command
    runs: list[Run] = [] if state is None else sorted(state.runs.values(),
                                                      key=lambda r: r.ordinal)
    run = runs[a % len(runs)] if runs else None
    owned = [r for r in runs if r.state.owned]
    queued = [r for r in runs if r.state is RunState.QUEUED]
    if owned and b != 2 and op in ("checkpoint", "operation", "recover", "terminal"):
        run = owned[0]  # mostly aim at the run that can change
    elif queued and b != 2 and op == "acquire":
        run = queued[0]
    run_id = "none" if run is None else run.run_id
    fence = Fence("w0", 0, 0) if run is None else Fence(
        run.owner or "w0", run.revision, run.fencing_token)
    if b == 1:
        fence = Fence(fence.owner, fence.revision + 1, fence.fencing_token)
    elif b == 2:
        fence = Fence("intruder", fence.revision, fence.fencing_token)
    n = d.count + 1
    if op == "accept":
        keys = [] if state is None else sorted(state.admissions)
        if b == 0 and keys:
            return Accept(keys[a % len(keys)], f"x{n}", f"y{n}", f"z{n}", {"retry": n})
        clash = sorted(state.messages) if (b == 1 and state and state.messages) else []
        input_id = clash[a % len(clash)] if clash else f"in{n}"
        return Accept(f"k{n}", input_id, f"r{n}", f"a{n}", {"text": n})
    if op == "acquire":
        return Acquire(run_id, f"w{b}")
    if op == "checkpoint":
        return Checkpoint(run_id, fence, {"id": f"d{n}", "status": "s",
                                          "parts": [{"t": n}] * (a % 3)})
    if op == "operation":
        return Operation(run_id, fence, {"step": n})
    if op == "interrupt":
        return Interrupt(run_id)
    if op == "recover":
        revision = 0 if run is None else run.revision - (b == 3)
        action = "requeue" if a % 2 else "abandon"
        return Recover(run_id, revision, action, {"replaySafe": True})
    if op == "terminal":
        reason = REASONS[a % len(REASONS)]
        later = tuple(r.run_id for r in runs if run is not None and r.ordinal > run.ordinal
                      and r.state is RunState.QUEUED and r.fencing_token == 0)
        return Terminal(run_id, fence, reason, {"answer": n},
                        policy="p" if reason == "policy_stop" else None,
                        absorb_run_ids=later if b == 3 else ())
    history = [] if state is None else state.history()
    version = 0 if state is None or state.head_record is None else state.head_record.version
    active = {r.run_id for r in runs if r.state.active}
    settled = []  # the history prefix a compaction may cover (no message of an active run)
    for message in history:
        if message.run_id in active:
            break
        settled.append(message)
    pool = settled if settled and b != 2 else history
    first = history[0].message_id if history else "none"
    last = pool[a % len(pool)].message_id if pool else "none"
    return Compact(version - (b == 3), first, last, f"s{n}", {"summary": n})


def check_invariants(d: Driver, state: RuntimeState | None) -> None:
    """TRN-101/TRN-102/TRN-014..TRN-017/TRN-031: the fold equals the store; records sound."""
    folded = rebuild(d.conversation_id, ledger(d))
    if state is None:
        assert folded.is_empty()
        return
    assert canonical.encode(comparable(folded)) == canonical.encode(comparable(state))
    assert draft_problems(state) == []
    assert all(run_problems(run) == [] for run in state.runs.values())
    assert sum(run.state.owned for run in state.runs.values()) <= 1
    assert state.head_record is not None
    applied = sum(e.kind == "runtime/transition" for e in ledger(d))
    assert state.head_record.version == applied


EVERY_TYPE = [
    ("acquire", 0, 0), ("checkpoint", 0, 0), ("operation", 0, 0), ("accept", 0, 3),
    ("interrupt", 0, 0), ("terminal", 0, 3), ("compact", 0, 0), ("accept", 1, 3),
    ("acquire", 0, 0), ("recover", 1, 0), ("acquire", 0, 0), ("recover", 0, 0),
    ("accept", 0, 0), ("accept", 2, 1), ("checkpoint", 0, 1), ("operation", 0, 2),
]
"""A script in which every type applies at least once (the fast profile's budget is small)."""


@example(plain_first=True, script=EVERY_TYPE)
@given(plain_first=st.booleans(), script=st.lists(commands, min_size=1, max_size=40))
def test_random_transitions_keep_the_ledger_the_source_of_truth(
    plain_first: bool, script: list[tuple[str, int, int]]
) -> None:
    """TRN-004/TRN-100/TRN-101: each call keeps fold == store; an unapplied call writes nothing."""
    d = Driver(MemoryStore())
    if plain_first:
        d.store.append("c1", [draft("plain")])
    d.accept(0)  # a head to act on; the headless not_found paths have unit tests
    for command in script:
        state = stored(d)
        before: Any = (memory_state(d.store), None if state is None else state.to_json())
        transition = build(d, state, command)
        try:
            outcome = d(transition)
        except LedgerError as error:
            outcome = None
            event(f"{transition.type}: {error.kind}")
        else:
            event(f"{transition.type}: {outcome.status.value}")
        after = stored(d)
        if outcome is None or outcome.status is not Status.APPLIED:
            assert (memory_state(d.store), None if after is None else after.to_json()) == before
        else:
            assert outcome.event is not None and outcome.event.seq == d.store.head("c1")
            assert after is not None and after.head_record is not None
            assert outcome.version == after.head_record.version
        check_invariants(d, after)
