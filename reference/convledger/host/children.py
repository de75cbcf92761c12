"""Child graphs: spawn, settle and the fate table (FCT-020 .. FCT-023).

Children belong to the conversation, not to the run that spawned them. The
host's executor spawns first and the fact is recorded second, so a refused
spawn leaves no "spawned" child (stitchkit bug 11).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from convledger.canonical import JsonValue
from convledger.errors import PurgedError
from convledger.host.base import HostBase, events_of
from convledger.host.rows import ChildLink
from convledger.host.rules import LIVE_CHILD_STATES, children_fate
from convledger.store import LedgerStore


def children_of(store: LedgerStore, conversation_id: str) -> dict[str, str]:
    """Child conversation id -> its last recorded state, from the parent's ``child/state``."""
    states: dict[str, str] = {}
    for event in events_of(store, conversation_id):
        payload = event.payload
        if (
            event.kind == "child/state"
            and isinstance(payload, dict)
            and payload["parentConversationId"] == conversation_id
        ):
            states[str(payload["childConversationId"])] = str(payload["state"])
    return states


class ChildFacts(HostBase):
    """Spawning, settling and stopping the children of a conversation."""

    def apply_fate(self, conversation_id: str, reason: str) -> None:
        """FCT-021, FCT-022: stop live children on a stopping reason, else leave them."""
        if children_fate(reason) != "stop":
            return
        for child, link in sorted(self._links(conversation_id).items()):
            if link is not None and link.state in LIVE_CHILD_STATES:
                reached = self.children.stop(child)
                self.settle_child(conversation_id, child, "stopped" if reached else "lost")

    def spawn_child(
        self, conversation_id: str, child: str, *, budget: Mapping[str, JsonValue]
    ) -> bool:
        """FCT-020: spawn through the executor first, record second; False when refused."""
        try:
            self.children.spawn(child, budget)
        except Exception:  # any refusal of the host means "not spawned"
            return False
        state: JsonValue = {"parentConversationId": conversation_id,
                            "childConversationId": child, "state": "spawned"}
        seed = self.store.head(conversation_id)
        spawned: JsonValue = {"childConversationId": child, "seedUptoSeq": seed,
                              "budget": dict(budget)}
        appends = [
            (conversation_id, [self._draft("child/spawned", spawned),
                               self._draft("child/state", state)]),
            (child, [self._draft("child/state", state)]),
        ]
        link = ChildLink(conversation_id, child, "spawned", seed, dict(budget))
        if not self._write_row(link, appends, skip_purged=False):
            for target, drafts in appends:
                self.store.append(target, drafts)
        return True

    def _links(self, conversation_id: str) -> dict[str, ChildLink | None]:
        """The children of a conversation and their states: from the rows, else the ledger."""
        rows = self.fact_rows()
        if rows is not None:
            return {link.child_conversation_id: link for link in rows.child_links(conversation_id)}
        return {child: ChildLink(conversation_id, child, state, 0, {})
                for child, state in children_of(self.store, conversation_id).items()}

    def settle_child(self, parent: str, child: str, state: str) -> None:
        """FCT-023: record a child's state on both conversations, skipping a purged one."""
        payload: JsonValue = {"parentConversationId": parent, "childConversationId": child,
                              "state": state}
        link = self._links(parent).get(child)
        if link is not None:
            appends = [
                (target, [self._draft("child/state", payload)]) for target in (parent, child)
            ]
            if self._write_row(attrs.evolve(link, state=state), appends, skip_purged=True):
                return
        for conversation_id in (parent, child):
            try:
                self.append(conversation_id, ("child/state", payload))
            except PurgedError:
                continue

