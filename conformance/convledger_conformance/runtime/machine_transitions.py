"""The transition rules of the runtime state machine, one per transition type.

Each rule resolves its drawn integers to a transition of chapter TRN (accept,
acquire, checkpoint, operation, interrupt, recover, terminal, compact) and
hands it to :meth:`~convledger_conformance.runtime.machine_core.RuntimeMachineCore._transit`;
``advance`` keeps runs moving along the happy path (TRN-020 .. TRN-075).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import rule

from convledger.canonical import JsonValue
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    Recover,
    Terminal,
)
from convledger.runtime.records import REASON_STATE
from convledger.runtime.transitions import Transition
from convledger_conformance.runtime.machine_core import RuntimeMachineCore
from convledger_conformance.runtime.support import (
    AT,
    BODY,
    CONV,
    CONVERSATIONS,
    EVENT,
    FENCE_FAULTS,
    PICK,
    Call,
)


class RuntimeTransitionRules(RuntimeMachineCore):
    """The rules that call ``transition`` (TRN-020 .. TRN-075)."""

    @rule(conv=CONV, key=st.integers(0, 4),
          identity=st.sampled_from(["fresh"] * 8 + ["same", "taken_run", "taken_input",
                                                "taken_answer", "empty"]),
          at=AT, event=EVENT, body=BODY)
    def accept(self, conv: int, key: int, identity: str, at: int, event: int, body: str) -> None:
        """Admit an input; keys repeat, so duplicates and coalescing occur (TRN-020 .. 025)."""
        conversation = CONVERSATIONS[conv]
        input_id, run_id, answer = self._fresh("in"), self._fresh("run"), self._fresh("ans")
        state = self.model.state(conversation)
        taken_messages = sorted(state.messages) or sorted(
            a.input_id for a in state.admissions.values())
        if identity == "same":
            run_id = input_id  # TRN-022: the three ids must be pairwise distinct
        elif identity == "taken_run" and state.runs:
            run_id = sorted(state.runs)[0]
        elif identity == "taken_input" and taken_messages:
            input_id = taken_messages[0]
        elif identity == "taken_answer" and state.runs:
            answer = sorted(r.assistant_message_id for r in state.runs.values())[0]
        elif identity == "empty":
            input_id = ""
        transition = Accept(idempotency_key=f"key{key}", input_id=input_id, run_id=run_id,
                            assistant_message_id=answer, message={"text": body})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, owner=st.sampled_from(["w1", "w2"]), at=AT, event=EVENT)
    def acquire(self, conv: int, run: int, owner: str, at: int, event: int) -> None:
        """Take a run in causal order; the first acquire places its messages (TRN-030 .. 034)."""
        conversation = CONVERSATIONS[conv]
        transition = Acquire(run_id=self._run_id(conversation, run), owner=owner)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, fault=st.sampled_from(FENCE_FAULTS), at=AT, event=EVENT,
          shape=st.sampled_from(["valid"] * 6 + ["no id", "parts not a list"]), parts=PICK)
    def checkpoint(
        self, conv: int, run: int, fault: str | None, at: int, event: int, shape: str, parts: int
    ) -> None:
        """Save a draft under the fence; the ledger gets its summary (TRN-040 .. TRN-043)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        draft: dict[str, JsonValue] = {"id": f"d{parts}", "status": "streaming",
                                       "parts": [{"text": "é" * n} for n in range(parts)]}
        if shape == "no id":
            del draft["id"]
        elif shape == "parts not a list":
            draft["parts"] = "text"
        transition = Checkpoint(run_id=self._run_id(conversation, run),
                                fence=self._fence(target, fault), draft=draft)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, fault=st.sampled_from(FENCE_FAULTS), at=AT, event=EVENT,
          name=BODY)
    def operation(self, conv: int, run: int, fault: str | None, at: int, event: int,
                  name: str) -> None:
        """Record the current operation under the fence (TRN-040, TRN-044)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        transition = Operation(run_id=self._run_id(conversation, run),
                               fence=self._fence(target, fault), operation={"tool": name})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, at=AT, event=EVENT)
    def interrupt(self, conv: int, run: int, at: int, event: int) -> None:
        """Ask a run to stop (TRN-050, TRN-051)."""
        conversation = CONVERSATIONS[conv]
        transition = Interrupt(run_id=self._run_id(conversation, run))
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK,
          action=st.sampled_from(["requeue", "requeue", "abandon", "abandon", "restart"]),
          evidence=st.sampled_from(["safe"] * 4 + ["truthy", "none"]),
          stale=st.sampled_from([False] * 4 + [True]),
          at=AT, event=EVENT)
    def recover(self, conv: int, run: int, action: str, evidence: str, stale: bool, at: int,
                event: int) -> None:
        """Requeue (with replaySafe true only) or abandon a run (TRN-053 .. TRN-055)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        revision = (target.revision if target is not None else 0) + (1 if stale else 0)
        proofs: dict[str, dict[str, JsonValue]] = {
            "safe": {"replaySafe": True}, "truthy": {"replaySafe": 1}, "none": {},
        }
        proof = proofs[evidence]
        transition = Recover(run_id=self._run_id(conversation, run), revision=revision,
                             action=action, evidence=proof)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, fault=st.sampled_from(FENCE_FAULTS),
          reason=st.sampled_from([*REASON_STATE, *["success"] * 5, "unheard_of"]),
          policy=st.sampled_from(["match"] * 7 + ["mismatch"]),
          absorb=st.sampled_from([[]] * 6 + [[0], [0], [1], [0, 1], [4], [5], [6], [0, 0]]),
          at=AT, event=EVENT, body=BODY)
    def terminal(self, conv: int, run: int, fault: str | None, reason: str, policy: str,
                 absorb: list[int], at: int, event: int, body: str) -> None:
        """End a run, absorbing later queued runs atomically (TRN-060 .. TRN-066)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        named = (reason == "policy_stop") == (policy == "match")
        transition = Terminal(
            run_id=self._run_id(conversation, run),
            fence=self._fence(target, fault),
            reason=reason,
            message={"text": body},
            policy="p" if named else None,
            absorb_run_ids=self._absorbed(conversation, target, absorb),
        )
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, version=st.sampled_from([0, 0, 0, 1, -1]), first=PICK, last=PICK,
          summary=st.sampled_from(["fresh", "fresh", "taken"]), at=AT, event=EVENT)
    def compact(self, conv: int, version: int, first: int, last: int, summary: str, at: int,
                event: int) -> None:
        """Summarize an exact range at the version read (TRN-070 .. TRN-075)."""
        conversation = CONVERSATIONS[conv]
        state = self.model.state(conversation)
        history = state.history()
        messages = self._messages(conversation)
        expected = (0 if state.head_record is None else state.head_record.version) + version
        summary_id = self._fresh("sum")
        if summary == "taken" and messages:
            summary_id = messages[-1].message_id
        if history and first < 3:
            first_id = history[0].message_id  # the only start TRN-072 allows
        else:
            first_id = messages[first].message_id if first < len(messages) else "ghost-message"
        active = {run.run_id for run in state.active_runs()}
        settled = []  # the history before the first message of an active run (TRN-072)
        for message in history:
            if message.run_id in active:
                break
            settled.append(message)
        if last < 4 and settled:
            last_id = settled[last % len(settled)].message_id
        else:
            last_id = history[last].message_id if last < len(history) else "ghost-message"
        transition = Compact(
            expected_version=expected,  # -1 is invalid_input, 0 without a head not_found
            first_message_id=first_id,
            last_message_id=last_id,
            summary_message_id=summary_id,
            summary={"text": "summary"},
        )
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, step=st.integers(0, 4), at=AT, event=EVENT)
    def advance(self, conv: int, step: int, at: int, event: int) -> None:
        """The happy path: the next natural transition of the conversation's first active run.

        Random transitions mostly meet conflicts; this rule keeps runs moving
        through acquire, checkpoint, operation and terminal (with absorption).
        """
        conversation = CONVERSATIONS[conv]
        active = self.model.state(conversation).active_runs()
        run = active[0] if active else None
        transition: Transition
        if run is None:
            transition = Accept(self._fresh("key"), self._fresh("in"), self._fresh("run"),
                                self._fresh("ans"), {"text": "next"})
        elif not run.state.owned:
            transition = Acquire(run.run_id, f"w{step % 2 + 1}")
        else:
            fence = Fence(run.owner or "", run.revision, run.fencing_token)
            later = tuple(r.run_id for r in active[1:] if r.fencing_token == 0)
            if step == 0:
                draft: dict[str, JsonValue] = {"id": "d", "status": "partial",
                                               "parts": [{"text": "é\x00"}]}
                transition = Checkpoint(run.run_id, fence, draft)
            elif step == 1:
                transition = Operation(run.run_id, fence, {"tool": "search"})
            elif step == 2:
                transition = Terminal(run.run_id, fence, "success", {"text": "done"},
                                      absorb_run_ids=later)
            elif step == 3:
                transition = Terminal(run.run_id, fence, "policy_stop", {"text": "stop"},
                                      policy="budget")
            else:
                transition = Terminal(run.run_id, fence, "interrupted", {"text": "stopped"})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))
