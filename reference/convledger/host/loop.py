"""A deliberately small runtime step loop (chapters ``provider.md`` and ``facts.md``).

Theory of operation
-------------------
:class:`Host` drives one run at a time through the store's transitions
(acquire, operation, checkpoint, terminal) with injected capabilities
(:mod:`convledger.host.capabilities`) and records every fact with ``append``:

* at run start ONE paged read of the conversation learns which provider bodies
  it already holds (PRV-006);
* each step sends the history up to the run's own inputs (PRV-020) plus the
  bodies its earlier steps produced; before every call it appends the new
  ``provider/message`` bodies and the ``provider/request`` in one batch
  (PRV-001, PRV-004), after a completed attempt ``provider/response``
  (PRV-010), around a retry delay ``retry/scheduled`` and ``retry/started``
  (PRV-012), and never retries a step whose tool already ran (PRV-013);
* when the run ends, the fate table of :mod:`convledger.host.rules` decides
  the conversation's children (FCT-021, FCT-022).

State slots and sandbox probes are methods of :class:`Host` too; children
live in :mod:`convledger.host.children` and schedules in
:mod:`convledger.host.schedules`, mixed in over :class:`~convledger.host.base.HostBase`,
which holds the capabilities and the writes (FCT-001 .. FCT-030). It is not a
scheduler or a worker pool: it is the smallest loop that shows every fact
written at the right moment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.host.base import HostBase, HostError, Schedule, events_of, stamp
from convledger.host.capabilities import (
    ProviderFailure,
    ProviderReply,
)
from convledger.host.children import ChildFacts, children_of
from convledger.host.messages import body_sha, instructions_sha, ledger_form, message_sha
from convledger.host.schedules import ScheduleFacts
from convledger.interface import require
from convledger.projections.builtins import fold_state_slots
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Fence,
    Operation,
    Run,
    Terminal,
)
from convledger.runtime.records import MessageStatus

Tool = Callable[[dict[str, JsonValue]], object]

__all__ = [
    "Host", "HostBase", "HostError", "Schedule", "children_of", "events_of", "fence_of", "stamp",
]


class Host(ChildFacts, ScheduleFacts):
    """The runtime step loop with its injected capabilities."""

    # -- runs ----------------------------------------------------------------------------

    def accept(self, conversation_id: str, text: str) -> str:
        """Admit a user input; answer the run it joined (TRN-023, TRN-024)."""
        run = self.transition(
            conversation_id,
            Accept(
                idempotency_key=self.ids.new_id("key"),
                input_id=self.ids.new_id("in"),
                run_id=self.ids.new_id("run"),
                assistant_message_id=self.ids.new_id("msg"),
                message={"role": "user", "parts": [{"type": "text", "text": text}]},
            ),
        )
        return run.run_id

    def acquire(self, conversation_id: str, run_id: str) -> Run:
        """Acquire a queued run for this host's owner (TRN-030 .. TRN-034)."""
        return self.transition(conversation_id, Acquire(run_id=run_id, owner=self.owner))

    def history(self, conversation_id: str, run: Run) -> list[JsonValue]:
        """PRV-020: the active history before the run's assistant message, as provider bodies.

        Read at every step from the bounded snapshot (TRN-082), never from the
        ledger: inputs admitted meanwhile for a successor are not placed yet
        (TRN-032, TRN-034), so they cannot appear here.
        """
        snapshot = require(self.store, Capability.TRANSITIONS).load_snapshot(conversation_id)
        bound = next(
            message.position
            for message in snapshot.messages
            if message.message_id == run.assistant_message_id
        )
        return [
            {"role": message.role.value, "content": message.content}
            for message in snapshot.messages
            if message.position < bound and message.status is MessageStatus.FINAL
        ]

    def known_bodies(self, conversation_id: str) -> set[str]:
        """PRV-006: the bodies the conversation holds, from one paged read at run start."""
        return {
            str(event.payload["sha256"])
            for event in events_of(self.store, conversation_id)
            if event.kind == "provider/message" and isinstance(event.payload, dict)
        }

    def run(
        self,
        conversation_id: str,
        run_id: str,
        *,
        instructions: str = "Be helpful.",
        tools: Mapping[str, Tool] | None = None,
        spawn: Sequence[str] = (),
        end_reason: str | None = None,
    ) -> str:
        """Acquire the run, spawn ``spawn`` children, step until it ends; answer its reason.

        With ``end_reason`` the run ends with that reason right after its spawns,
        without calling the provider (a cancel, a timeout, a shutdown ...).
        """
        run = self.acquire(conversation_id, run_id)
        for child in spawn:
            self.spawn_child(conversation_id, child, budget={"steps": 4})
        if end_reason is not None:
            return self.finish(conversation_id, run, end_reason)
        known = self.known_bodies(conversation_id)
        produced: list[object] = []
        for step in range(self.max_steps):  # PRV-002: stepNumber 0, 1, ...
            history = self.history(conversation_id, run)
            reply, run = self._step(
                conversation_id, run, step, instructions, [*history, *produced], known
            )
            if reply is None:
                return self.finish(conversation_id, run, "provider_failure")
            if not reply.tool_calls:
                return self.finish(conversation_id, run, "success", text=reply.text)
            run, outputs = self._tools(conversation_id, run, step, reply, tools or {})
            produced.extend(outputs)
        return self.finish(conversation_id, run, "runtime_failure")

    def _step(
        self,
        conversation_id: str,
        run: Run,
        step: int,
        instructions: str,
        messages: list[object],
        known: set[str],
    ) -> tuple[ProviderReply | None, Run]:
        """One step: attempts 1..k, each recorded before its call (PRV-001 .. PRV-013)."""
        forms = [ledger_form(message) for message in messages]
        shas = [message_sha(form) for form in forms]
        instructions_hash = instructions_sha(instructions)
        identity: dict[str, JsonValue] = {"runId": run.run_id, "stepNumber": step}
        for attempt in range(1, self.max_attempts + 1):  # PRV-002: attempts 1..k
            facts: list[tuple[str, JsonValue]] = []
            for sha, form in zip(shas, forms, strict=True):
                if sha not in known:
                    known.add(sha)
                    facts.append(("provider/message", {"sha256": sha, "message": form}))
            facts.append(("provider/request", {
                **identity, "attempt": attempt, "modelId": self.model_id,
                "instructionsSha256": instructions_hash, "messageShas": list(shas),
                "bodySha256": body_sha(instructions_hash, shas),
            }))
            try:
                reply = self.record_and_call(
                    conversation_id,
                    facts,
                    lambda: self.provider.call(self.model_id, instructions, messages),
                )
            except ProviderFailure as failure:
                if failure.after_tool or attempt == self.max_attempts:
                    return None, run
                delay = self.base_delay_ms * 2 ** (attempt - 1)
                self.append(conversation_id, ("retry/scheduled", {
                    "attempt": attempt + 1, "delayMs": delay, "reason": failure.reason,
                }))
                self.clock.sleep(delay)
                self.append(conversation_id, ("retry/started", {"attempt": attempt + 1}))
                continue
            response: dict[str, JsonValue] = {"id": reply.id}
            if reply.provider is not None:
                response["provider"] = reply.provider
            # PRV-011: one response per (runId, attempt, stepNumber), only for a completed attempt.
            self.append(conversation_id, ("provider/response", {
                **identity, "attempt": attempt, "response": response,
            }))
            return reply, run
        return None, run

    def _tools(
        self,
        conversation_id: str,
        run: Run,
        step: int,
        reply: ProviderReply,
        tools: Mapping[str, Tool],
    ) -> tuple[Run, list[object]]:
        """Run the reply's tool calls, each announced by an operation, then checkpoint."""
        outputs: list[object] = [{
            "role": "assistant",
            "toolCalls": [{"name": call.name, "arguments": call.arguments}
                          for call in reply.tool_calls],
        }]
        for call in reply.tool_calls:
            run = self.transition(conversation_id, Operation(
                run_id=run.run_id, fence=fence_of(run),
                operation={"type": "tool", "name": call.name, "stepNumber": step},
            ))
            tool = tools.get(call.name)
            result: object = {"error": "unknown tool"} if tool is None else tool(
                call.arguments
            )
            outputs.append({"role": "tool", "name": call.name, "content": result})
        run = self.transition(conversation_id, Checkpoint(
            run_id=run.run_id, fence=fence_of(run),
            draft={"id": run.assistant_message_id, "status": "streaming",
                   "parts": [{"type": "tool", "name": call.name} for call in reply.tool_calls]},
        ))
        return run, outputs

    def record_and_call(
        self,
        conversation_id: str,
        facts: Sequence[tuple[str, JsonValue]],
        call: Callable[[], ProviderReply],
    ) -> ProviderReply:
        """PRV-001: append the new bodies and the request in one batch, THEN call."""
        self.append(conversation_id, *facts)
        return call()

    def finish(self, conversation_id: str, run: Run, reason: str, *, text: str = "") -> str:
        """End the run with ``reason``, then apply the children fate table (FCT-021, FCT-022)."""
        message: dict[str, JsonValue] = {
            "role": "assistant", "parts": [{"type": "text", "text": text}] if text else [],
        }
        policy = "host-policy" if reason == "policy_stop" else None
        self.transition(conversation_id, Terminal(
            run_id=run.run_id, fence=fence_of(run), reason=reason, message=message,
            policy=policy,
        ))
        self.apply_fate(conversation_id, reason)
        return reason

    # -- state slots, schedules, sandbox -------------------------------------------------

    def set_state(self, conversation_id: str, name: str, value: JsonValue, *, actor: str) -> int:
        """FCT-001: append ``state/set`` with the slot's next version; answer the version."""
        slots: JsonValue = {}
        for event in events_of(self.store, conversation_id):
            slots = fold_state_slots(slots, event)
        assert isinstance(slots, dict)
        current = slots.get(name)
        version = 1 if not isinstance(current, dict) else int(str(current["version"])) + 1
        self.append(conversation_id, ("state/set", {
            "name": name, "version": version, "value": value, "actor": actor,
        }))
        return version

    def probe_sandbox(self, conversation_id: str, required: Sequence[str]) -> str:
        """FCT-030: ask the prober, record ``sandbox/probed``; answer the result."""
        missing = list(self.prober.missing(required))
        if not missing:
            result = "available"
        elif len(missing) == len(required):
            result = "unavailable"
        else:
            result = "degraded"
        self.append(conversation_id, ("sandbox/probed", {
            "result": result, "required": list(required), "missing": missing,
        }))
        return result


def fence_of(run: Run) -> Fence:
    """The fence the run's owner presents (TRN-040)."""
    assert run.owner is not None
    return Fence(run.owner, run.revision, run.fencing_token)
