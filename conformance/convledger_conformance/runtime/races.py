"""The race rules of the runtime machine: real threads against one store (TRN-003, TRN-034).

:class:`RaceRules` is mixed into
:class:`~convledger_conformance.runtime.machine.RuntimeMachineBase`. Each rule
releases two transition calls at once from two threads; whatever the
interleaving, the outcomes must be those of one serial order of the model
(:meth:`RaceRules._race` tries every order), and each race also asserts its
own result: two terminals with one fence give exactly one applied; two
accepts with one key give one applied and one duplicate; an admission racing
the predecessor's acquire is placed after the predecessor's answer.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import permutations

from hypothesis.stateful import RuleBasedStateMachine, rule

from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.runtime import Accept, Acquire, Fence, Outcome, Run, Terminal
from convledger.runtime.store import TransitionStore
from convledger_conformance.runtime.model import RuntimeModel, decision_json, outcome_json
from convledger_conformance.runtime.support import (
    AT,
    CONV,
    CONVERSATIONS,
    PICK,
    Call,
    copy_model,
    fail,
)


class RaceRules(RuleBasedStateMachine):
    """Rules that run two transitions at once; the machine supplies store, model and draws."""

    store: TransitionStore
    model: RuntimeModel
    dirty: set[str]

    def _fresh(self, prefix: str) -> str:
        raise NotImplementedError

    def _at(self, at: int) -> str:
        raise NotImplementedError

    def _owned(self) -> list[Run]:
        return self.model.recoverable()

    @rule(pick=PICK, at=AT)
    def race_terminals(self, pick: int, at: int) -> None:
        """Two terminals with one fence, at once: exactly one applied, one conflict (TRN-003).

        A no-op without an owned run, rather than a precondition: which of two
        racing calls wins is the store's choice, so the state after a race may
        differ between two runs of one program, and a precondition on it would
        make Hypothesis draw differently (FlakyStrategyDefinition).
        """
        owned = self._owned()
        if not owned:
            return
        run = owned[pick % len(owned)]
        fence = Fence(run.owner or "", run.revision, run.fencing_token)
        calls = [
            Call(run.conversation_id, Terminal(run.run_id, fence, reason, {"by": reason}),
                 self._fresh("ev"), self._at(at % 19))
            for reason in ("success", "timeout")
        ]
        statuses = self._race(calls)
        if sorted(statuses) != ["applied", "conflict"]:
            fail(("TRN-003", "TRN-040"), f"two terminals with one fence answered {statuses}")

    @rule(conv=CONV, at=AT)
    def race_accepts(self, conv: int, at: int) -> None:
        """Two accepts with one new key, at once: one applied, one duplicate (TRN-021, TRN-003)."""
        conversation = CONVERSATIONS[conv]
        if conversation in self.model.purged:
            return
        key = self._fresh("key")
        calls = [
            Call(conversation, Accept(key, self._fresh("in"), self._fresh("run"),
                                      self._fresh("ans"), {"n": n}),
                 self._fresh("ev"), self._at(at % 19))
            for n in range(2)
        ]
        statuses = self._race(calls)
        if sorted(statuses) != ["applied", "duplicate"]:
            fail(("TRN-021", "TRN-003"), f"two accepts with one key answered {statuses}")

    def _acquirable(self) -> list[Run]:
        found = []
        for conversation in CONVERSATIONS:
            if conversation in self.model.purged:
                continue
            active = self.model.state(conversation).active_runs()
            if active and active[0].state.value == "queued":
                found.append(active[0])
        return found

    @rule(pick=PICK, at=AT)
    def race_acquire_and_accept(self, pick: int, at: int) -> None:
        """An admission racing the predecessor's acquire is placed after its answer (TRN-034).

        A no-op without an acquirable run (not a precondition: see :meth:`race_terminals`).
        """
        runs = self._acquirable()
        if not runs:
            return
        run = runs[pick % len(runs)]
        conversation = run.conversation_id
        calls = [
            Call(conversation, Acquire(run.run_id, "w1"), self._fresh("ev"), self._at(at % 19)),
            Call(conversation, Accept(self._fresh("key"), self._fresh("in"), self._fresh("run"),
                                      self._fresh("ans"), {"racing": True}),
                 self._fresh("ev"), self._at(at % 19)),
        ]
        statuses = self._race(calls)
        if statuses != ["applied", "applied"]:
            fail(("TRN-031", "TRN-034"), f"an acquire and an accept at once answered {statuses}")

    def _race(self, calls: Sequence[Call]) -> list[str]:
        """Run ``calls`` from threads released at once; the outcomes must be a serial order's."""
        self.dirty.update(call.conversation for call in calls)
        results: list[Outcome | LedgerError | None] = [None] * len(calls)
        crashes: list[BaseException] = []
        barrier = threading.Barrier(len(calls))

        def work(index: int) -> None:
            call = calls[index]
            try:
                barrier.wait()
                results[index] = self.store.transition(
                    call.conversation, call.transition, event_id=call.event_id,
                    occurred_at=call.occurred_at)
            except LedgerError as error:
                results[index] = error
            except BaseException as error:  # reported below, on the main thread
                crashes.append(error)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if crashes:
            fail(("TRN-001",), f"a concurrent transition crashed: {crashes[0]!r}")
        refused = [r for r in results if isinstance(r, LedgerError)]
        if refused:
            fail(("TRN-003", "TRN-001"), f"a concurrent valid transition was refused: "
                 f"{refused[0]!r}")
        outcomes = [r for r in results if isinstance(r, Outcome)]
        observed = [outcome_json(o) for o in outcomes]
        for order in permutations(range(len(calls))):
            trial = copy_model(self.model)
            predicted: list[JsonValue] = [None] * len(calls)
            for index in order:
                call = calls[index]
                expected = trial.expect(call.conversation, call.transition, call.event_id,
                                        call.occurred_at)
                if expected.decision is None or expected.draft is None:
                    break
                wire = trial.event_wire(call.conversation, expected.draft)
                predicted[index] = decision_json(expected.decision, wire)
                trial.commit(call.conversation, expected)
            if predicted == observed:
                self.model = trial
                return [o.status.value for o in outcomes]
        fail(("TRN-003", "TRN-001", "TRN-034"), f"concurrent transitions answered {observed}, "
             "which no serial order of them gives")
