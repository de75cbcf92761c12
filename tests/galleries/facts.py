"""The facts gallery: broken hosts, each breaking one rule of chapters PRV or FCT.

A broken host is a :class:`~convledger.host.Host` subclass overriding one
public method (calling ``super()`` where the bug keeps the rest). Its record
(:class:`~galleries.BrokenStore`) names the ids its bug breaks; its
``factory`` is the host class and its ``checks`` the check bodies
(``convledger_conformance.facts.checks_provider.BODIES`` / ``facts.BODIES``) that
must catch it, run over each reference store; ``test_gallery_facts.py`` runs
them. The kill table runs stores only, so these are not among
:func:`galleries.cases`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from convledger.canonical import JsonValue
from convledger.host import Host, events_of
from convledger.host.capabilities import ProviderReply
from convledger.runtime import Run
from galleries import BrokenStore, broken


class LeakyPromptHost(Host):
    """Sends the inputs admitted for successors in the predecessor's prompt (stitchkit bug 1)."""

    def history(self, conversation_id: str, run: Run) -> list[JsonValue]:
        """The placed history plus every admitted input not placed yet."""
        placed = super().history(conversation_id, run)
        snapshot = self.store.load_snapshot(conversation_id)
        ids = {message.message_id for message in snapshot.messages}
        for event in events_of(self.store, conversation_id):
            payload = event.payload
            if event.kind == "runtime/transition" and isinstance(payload, dict):
                recorded = payload["input"]
                if (payload["type"] == "accept" and isinstance(recorded, dict)
                        and recorded["inputId"] not in ids):
                    placed.append({"role": "user", "content": recorded["message"]})
        return placed


class TimeoutLeavesChildrenHost(Host):
    """Treats a parent timeout like a success: its children keep running."""

    def apply_fate(self, conversation_id: str, reason: str) -> None:
        """Wrong table row for ``timeout``."""
        if reason != "timeout":
            super().apply_fate(conversation_id, reason)


class RequestAfterCallHost(Host):
    """Records the request only after the provider answered."""

    def record_and_call(
        self,
        conversation_id: str,
        facts: Sequence[tuple[str, JsonValue]],
        call: Callable[[], ProviderReply],
    ) -> ProviderReply:
        """Call first, record second."""
        reply = call()
        self.append(conversation_id, *facts)
        return reply


class DuplicateBodiesHost(Host):
    """Forgets which bodies the conversation holds, so every run records them again."""

    def known_bodies(self, conversation_id: str) -> set[str]:
        """Nothing is known."""
        return set()


class RecordBeforeSpawnHost(Host):
    """Records the child before the executor spawned it (stitchkit bug 11)."""

    def spawn_child(
        self, conversation_id: str, child: str, *, budget: Mapping[str, JsonValue]
    ) -> bool:
        """Record, then spawn."""
        state: JsonValue = {"parentConversationId": conversation_id,
                            "childConversationId": child, "state": "spawned"}
        self.append(conversation_id, ("child/spawned", {
            "childConversationId": child, "seedUptoSeq": self.store.head(conversation_id),
            "budget": dict(budget),
        }), ("child/state", state))
        self.append(child, ("child/state", state))
        try:
            self.children.spawn(child, budget)
        except Exception:  # the refusal comes too late: the child is recorded
            return False
        return True


BROKEN: tuple[BrokenStore, ...] = (
    broken("facts", LeakyPromptHost, "PRV-020", checks=("random", "scripted")),
    broken("facts", TimeoutLeavesChildrenHost, "FCT-021", checks=("fate_table",)),
    broken("facts", RequestAfterCallHost, "PRV-001", checks=("random", "scripted")),
    broken("facts", DuplicateBodiesHost, "PRV-004", checks=("random", "scripted")),
    broken("facts", RecordBeforeSpawnHost, "FCT-020", checks=("spawning",)),
)
"""Every broken host, the ids it breaks and the check bodies that catch it."""
