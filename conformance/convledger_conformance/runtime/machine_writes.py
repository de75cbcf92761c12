"""The other write rules of the runtime state machine: appends, purge, export and import.

Other kinds interleave with the transitions and do not fold (TRN-100) while
runtime kinds are refused on append (TRN-108); purge answers conflict while a
run is active and tombstones the conversation (TRN-090 .. TRN-094); an export
imports into a fresh store that answers as this one (TRN-103 .. TRN-107).
"""

from __future__ import annotations

import json
from functools import partial

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.interface import require
from convledger.runtime import Accept
from convledger.runtime.view import Status
from convledger.store import Capability
from convledger_conformance.runtime.machine_core import RuntimeMachineCore
from convledger_conformance.runtime.model import RUNTIME_KINDS_ON_APPEND, outcome_json
from convledger_conformance.runtime.support import CONV, CONVERSATIONS, STAMPS, compare_reads, fail


class RuntimeWriteRules(RuntimeMachineCore):
    """The rules that append, purge, export and import (TRN-090 .. TRN-108)."""

    @rule(conv=CONV, runtime=st.sampled_from([None, None, *RUNTIME_KINDS_ON_APPEND]))
    def append_event(self, conv: int, runtime: str | None) -> None:
        """Other kinds interleave and do not fold (TRN-100); runtime kinds are refused (TRN-108)."""
        conversation = CONVERSATIONS[conv]
        payload: JsonValue = {"name": "slot", "version": 1, "value": 1, "actor": "machine"}
        kind = "state/set"
        if runtime == "runtime/transition":
            kind, payload = runtime, {"type": "interrupt", "input": {"runId": "ghost"}}
        elif runtime == "runtime/baseline":
            kind = runtime
            payload = {"migratedAt": "2024-01-01T00:00:00Z", "head": {}, "messages": [],
                       "runs": [], "admissions": []}
        draft = EventDraft(event_id=self._fresh("ev"), kind=kind, occurred_at=STAMPS[0],
                           payload=payload)
        if runtime is not None:
            self._refusal(partial(self.store.append, conversation, [draft]),
                          "invalid_input", ("TRN-108",), conversation, f"append of {kind}")
        elif conversation in self.model.purged:
            self._refusal(partial(self.store.append, conversation, [draft]),
                          "purged", ("TRN-092",), conversation, "append after purge")
        else:
            self._call(partial(self.store.append, conversation, [draft]), ("TRN-108",),
                       "append of state/set")
            self.model.append(conversation, [draft])
            self.dirty.add(conversation)

    @precondition(lambda self: self.with_purge)
    @rule(conv=CONV, chance=st.integers(0, 3))
    def purge(self, conv: int, chance: int) -> None:
        """Purge a conversation: conflict while a run is active, tombstone forever (TRN-090 ..).

        Only one draw in four purges, so most programs keep their conversations a while.
        """
        if chance:
            return
        purging = require(self.store, Capability.PURGE)  # with_purge: the store declares purge
        conversation = CONVERSATIONS[conv]
        state = self.model.state(conversation)
        if conversation not in self.model.purged and state.active_runs():
            self._refusal(partial(purging.purge, conversation), "conflict", ("TRN-091",),
                          conversation, "purge with an active run")
            return
        answer = self._call(partial(purging.purge, conversation), ("TRN-090",), "purge")
        want = "already_purged" if conversation in self.model.purged else "purged"
        if answer.value != want:
            fail(("TRN-090",), f"purge of {conversation!r} answered {answer.value!r}, "
                 f"expected {want!r}")
        self.model.purge(conversation)
        self.dirty.add(conversation)
        self._refusal(partial(self.store.export_conversation, conversation), "not_found",
                      ("TRN-094",), conversation, "export after purge")

    @rule(conv=CONV)
    def export_import_elsewhere(self, conv: int) -> None:
        """An export imports into a fresh store that answers as this one (TRN-103 .. TRN-107)."""
        conversation = CONVERSATIONS[conv]
        if not self.model.events(conversation):
            return
        data = self._call(partial(self.store.export_conversation, conversation), ("TRN-107",),
                          "export")
        state = self.model.state(conversation)
        companions = json.loads(data)
        assert isinstance(companions, dict)
        want = {} if state.head_record is None else {"runtime": state.to_json()}
        if canonical.encode(companions["companions"]) != canonical.encode(want):
            fail(("TRN-103", "TRN-107"), f"the export of {conversation!r} carries companions "
                 f"{companions['companions']!r}, expected {want!r}")
        other = require(type(self).factory(), Capability.TRANSITIONS)
        try:
            self._call(partial(other.import_conversation, data), ("TRN-105",), "import")
            if other.export_conversation(conversation) != data:
                fail(("TRN-106",), "re-export of an imported conversation differs")
            compare_reads(other, conversation, state, ("TRN-105",))
            for admission in state.admissions.values():
                repeated = Accept(admission.idempotency_key, self._fresh("in"),
                                  self._fresh("run"), self._fresh("ans"), {"again": True})
                outcome = self._call(
                    partial(other.transition, conversation, repeated,
                            event_id=self._fresh("ev"), occurred_at=STAMPS[0]),
                    ("TRN-106", "TRN-021"), "repeated accept after import",
                )
                ids = (admission.input_id, admission.run_id, admission.assistant_message_id)
                got = outcome.admitted
                if outcome.status is not Status.DUPLICATE or got is None or (
                    got.input_id, got.run_id, got.assistant_message_id) != ids:
                    fail(("TRN-106", "TRN-021"), f"key {admission.idempotency_key!r} answered "
                         f"{outcome_json(outcome)!r} after import, expected duplicate {ids}")
        finally:
            other.close()
