"""What a restarted store answers after a kill, against what was acknowledged (DUR-001 .. 008).

:func:`verify` reads every conversation the workload touched from the store
opened again on the killed store's location (its ``head`` and every page of
``read``, purged conversations too) and returns the :class:`Violation` of
each rule it finds broken: the rule's id and what is missing or
half-visible. It writes nothing: the tombstone of each acknowledged purge is
probed by the next round's workload (an append refused ``purged``,
:meth:`~.workload.Workload.tombstones`), after these reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs

from convledger import MemoryStore
from convledger.capabilities import Capability
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.interface import EveryOperation
from convledger_conformance.durability.workload import PROJECTION, Ledger
from convledger_conformance.wire.connection import WireError


@attrs.frozen
class Violation:
    """One broken rule: its id and what shows it."""

    rule: str
    message: str


@attrs.define
class Verified:
    """What one verification looked at, and what it found."""

    violations: list[Violation] = attrs.field(factory=list)
    acknowledged: int = 0
    """Acknowledged writes checked."""
    in_flight: int = 0
    """Operations cut off by the kill, checked all-or-nothing."""

    def fail(self, rule: str, message: str) -> None:
        self.violations.append(Violation(rule, message))


def read_all(store: EveryOperation, conversation: str) -> list[Envelope]:
    """Every envelope of ``conversation``, page by page."""
    events: list[Envelope] = []
    start: int | None = 1
    while start is not None:
        page = store.read(conversation, from_seq=start, limit=1000)
        events.extend(page.items)
        start = page.next_seq
    return events


def _guarded(verified: Verified, rule: str, what: str, call: Callable[[], Any]) -> Any:
    """``call()``; a refusal or failure of the restarted store is a violation of ``rule``."""
    try:
        return call()
    except LedgerError as refusal:
        verified.fail(rule, f"{what}: the restarted store refused with {refusal.kind}: {refusal}")
    except WireError as error:  # ``internal``, a malformed reply, a lost server
        verified.fail(rule, f"{what}: the restarted store failed: {error}")
    return None


def verify(store: EveryOperation, ledger: Ledger) -> Verified:
    """Check the store opened again after a kill against every attempt of ``ledger``."""
    verified = Verified()
    purges = {a.conversation: a for a in ledger.attempts if a.op == "purge"}
    conversations = sorted({a.conversation for a in ledger.attempts})
    logs: dict[str, list[Envelope]] = {}
    for conversation in conversations:  # reads first: nothing is written before them
        events = _guarded(verified, "DUR-008", f"read {conversation!r}",
                          functools.partial(read_all, store, conversation))
        logs[conversation] = events or []
        head = _guarded(verified, "DUR-008", f"head {conversation!r}",
                        functools.partial(store.head, conversation))
        last = logs[conversation][-1].seq if logs[conversation] else 0
        if events is not None and head is not None and head != last:
            verified.fail("DUR-014", f"{conversation!r}: head answers {head} after the kill, but "
                          f"read returns {len(logs[conversation])} events up to seq {last}")
    _check_ledgers(verified, ledger, logs)
    purged = {conversation for conversation, a in purges.items() if a.status == "acked"}
    for conversation in sorted(purged):
        if logs[conversation]:
            verified.fail("DUR-007", f"acknowledged purge of {conversation!r} was undone by the "
                          f"kill: read returns {len(logs[conversation])} events")
    unsettled = {conversation for conversation, a in purges.items() if a.unsettled}
    for attempt in ledger.attempts:
        if attempt.conversation in purged | unsettled and attempt.op != "purge":
            if attempt.status == "acked":
                verified.acknowledged += 1
            continue  # the purge removed it, or may have (checked above and below)
        events = logs[attempt.conversation]
        by_id = {event.event_id: event for event in events}
        present = [event_id in by_id for event_id in attempt.event_ids]
        if attempt.unsettled:
            verified.in_flight += 1
        if attempt.status == "acked":
            verified.acknowledged += 1
        if attempt.op == "append":
            _check_append(verified, attempt, present, by_id)
        elif attempt.op == "transition" and attempt.status == "acked" and not all(present):
            verified.fail("DUR-001", f"acknowledged transition {attempt.event_ids[0]!r} of "
                          f"{attempt.conversation!r} is missing after the kill")
        elif attempt.op == "import":
            _check_import(verified, attempt, events)
        elif attempt.op == "put_spill":
            _check_spill(verified, store, attempt, present[0])
        elif attempt.op == "catch_up":
            _check_catch_up(verified, attempt, len(events))
        if attempt.status == "refused" and any(present):
            verified.fail("DUR-005" if attempt.op == "import" else "DUR-002", (
                f"refused {attempt.op} of {attempt.conversation!r} ({attempt.result}) is "
                f"visible after the kill: {sum(present)} of its {len(present)} events"))
    for conversation in sorted(unsettled):
        seeds = [e for a in ledger.attempts if a.conversation == conversation
                 and a.op != "purge" and a.status == "acked" for e in a.event_ids]
        held = [event.event_id for event in logs[conversation]]
        if held not in ([], seeds):
            verified.fail("DUR-007", f"an in-flight purge of {conversation!r} left part of it: "
                          f"{len(held)} of {len(seeds)} events")
    declared = store.capabilities
    if Capability.PROJECTIONS in declared:
        acked_checkpoints_kept(verified, store, ledger)
    for conversation in conversations:
        if Capability.PROJECTIONS in declared:
            _check_checkpoint(verified, store, conversation, len(logs[conversation]))
        if Capability.TRANSITIONS in declared and any(
            a.conversation == conversation and a.op == "transition" for a in ledger.attempts
        ):
            _check_runtime(verified, store, conversation, len(logs[conversation]))
    verified.acknowledged += len(purged)  # their tombstones: the next round's workload
    return verified


def _check_ledgers(verified: Verified, ledger: Ledger, logs: dict[str, list[Envelope]]) -> None:
    attempted = {event_id for a in ledger.attempts for event_id in a.event_ids}
    seen: dict[str, str] = {}
    for conversation, events in logs.items():
        seqs = [event.seq for event in events]
        if seqs != list(range(1, len(events) + 1)):
            verified.fail("DUR-003", f"{conversation!r} has seqs {seqs[:20]}..., not 1..n")
        for event in events:
            if event.event_id in seen:
                verified.fail("DUR-003", f"eventId {event.event_id!r} is in "
                              f"{seen[event.event_id]!r} and {conversation!r}")
            seen[event.event_id] = conversation
            if event.event_id not in attempted:
                verified.fail("DUR-003", f"{conversation!r} holds {event.event_id!r}, which "
                              "no caller wrote")


def _check_append(verified: Verified, attempt: Any, present: list[bool],
                  by_id: dict[str, Envelope]) -> None:
    if attempt.status == "acked":
        for envelope in attempt.result:
            stored = by_id.get(envelope.event_id)
            if stored is None:
                verified.fail("DUR-001", f"acknowledged event {envelope.event_id!r} (seq "
                              f"{envelope.seq} of {attempt.conversation!r}) is missing after "
                              "the kill")
                return
            if stored != envelope:
                verified.fail("DUR-001", f"acknowledged event {envelope.event_id!r} came back as "
                              f"{stored!r}, not {envelope!r}")
                return
    if attempt.unsettled and any(present) and not all(present):
        verified.fail("DUR-002", f"part of an in-flight batch of {attempt.conversation!r} is "
                      f"visible: {sum(present)} of {len(present)} events")
    if all(present) and len(present) > 1:
        seqs = [by_id[event_id].seq for event_id in attempt.event_ids]
        if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            verified.fail("DUR-002", f"a batch of {attempt.conversation!r} sits at seqs {seqs}")


def _check_import(verified: Verified, attempt: Any, events: list[Envelope]) -> None:
    expected = list(attempt.event_ids)
    held = [event.event_id for event in events]
    if attempt.status == "acked" and held != expected:
        verified.fail("DUR-001", f"acknowledged import of {attempt.conversation!r} holds "
                      f"{len(held)} of its {len(expected)} events after the kill")
    elif attempt.unsettled and held not in ([], expected):
        verified.fail("DUR-005", f"part of an in-flight import of {attempt.conversation!r} is "
                      f"visible: {len(held)} of {len(expected)} events")


def _check_spill(verified: Verified, store: EveryOperation, attempt: Any, recorded: bool) -> None:
    reference, data = attempt.detail["reference"], attempt.detail["data"]
    try:
        held: bytes | None = store.get_spill(attempt.conversation, reference,
                                             authorize=lambda grant: True)
    except LedgerError as refusal:
        if refusal.kind != "not_found":
            verified.fail("DUR-008", f"get_spill {reference!r} refused with {refusal.kind}")
            return
        held = None
    except WireError as error:
        verified.fail("DUR-008", f"get_spill {reference!r}: the restarted store failed: {error}")
        return
    if attempt.status == "acked" and held != data:
        verified.fail("DUR-001", f"acknowledged spill {reference!r} of {attempt.conversation!r} "
                      f"is {'missing' if held is None else 'changed'} after the kill")
    elif (held is not None) != recorded:
        state = "readable without its event" if held is not None else "recorded but not readable"
        verified.fail("DUR-007", f"spill {reference!r} of {attempt.conversation!r} is {state}")
    elif held is not None and held != data:
        verified.fail("DUR-007", f"spill {reference!r} came back with other bytes")


def _check_catch_up(verified: Verified, attempt: Any, head: int) -> None:
    if attempt.status == "acked" and attempt.result.upto_seq > head:
        verified.fail("DUR-006", f"an acknowledged checkpoint of {attempt.conversation!r} is at "
                      f"{attempt.result.upto_seq}, past the head {head} after the kill")


def _check_checkpoint(verified: Verified, store: EveryOperation, conversation: str,
                      head: int) -> None:
    checkpoint = _guarded(verified, "DUR-008", f"load_checkpoint {conversation!r}",
                          lambda: store.load_checkpoint(conversation, PROJECTION.name))
    if checkpoint is None:
        return
    upto = checkpoint.upto_seq
    if upto > head:
        verified.fail("DUR-006", f"the checkpoint of {conversation!r} is at {upto}, ahead of "
                      f"the head {head}")
    if checkpoint.state != {"count": upto, "seqs": list(range(1, upto + 1))}:
        verified.fail("DUR-006", f"the checkpoint of {conversation!r} at {upto} holds "
                      f"{str(checkpoint.state)[:120]}, not the fold of events 1..{upto}")


def acked_checkpoints_kept(verified: Verified, store: EveryOperation, ledger: Ledger) -> None:
    """DUR-006: no checkpoint behind an acknowledged catch-up (definitions never change here)."""
    best: dict[str, int] = {}
    for attempt in ledger.acked("catch_up"):
        best[attempt.conversation] = max(best.get(attempt.conversation, 0), attempt.result.upto_seq)
    for conversation, upto in sorted(best.items()):
        checkpoint = _guarded(verified, "DUR-008", f"load_checkpoint {conversation!r}",
                              functools.partial(store.load_checkpoint, conversation,
                                                PROJECTION.name))
        held = 0 if checkpoint is None else checkpoint.upto_seq
        if held < upto:
            verified.fail("DUR-006", f"the checkpoint of {conversation!r} is at {held} after the "
                          f"kill, behind the acknowledged catch-up to {upto}")


def _snapshot_or_none(store: EveryOperation | MemoryStore, conversation: str) -> Any:
    """``load_snapshot``, None when refused ``not_found`` (no transition is stored, TRN-082)."""
    try:
        return store.load_snapshot(conversation)
    except LedgerError as refusal:
        if refusal.kind == "not_found":
            return None
        raise


def _check_runtime(verified: Verified, store: EveryOperation, conversation: str,
                   held: int) -> None:
    if not held:
        return  # nothing to export (ARC-005): a lost first write leaves no runtime state
    archive = _guarded(verified, "DUR-008", f"export {conversation!r}",
                       lambda: store.export_conversation(conversation))
    if archive is None:
        return
    rebuilt = MemoryStore()
    try:
        rebuilt.import_conversation(archive)
    except LedgerError as refusal:
        verified.fail("DUR-004", f"the runtime records of {conversation!r} disagree with its "
                      f"ledger after the kill: importing its export refused {refusal.kind}: "
                      f"{refusal}")
        return
    try:
        ours = _snapshot_or_none(store, conversation)
    except (LedgerError, WireError) as error:
        verified.fail("DUR-008", f"load_snapshot {conversation!r}: the restarted store failed: "
                      f"{error!r}")
        return
    if ours != _snapshot_or_none(rebuilt, conversation):
        verified.fail("DUR-004", f"the runtime snapshot of {conversation!r} is not the one its "
                      "ledger rebuilds")
