"""Where hostile values go: every argument slot of every operation, by capability (LIM).

:data:`SLOTS` is the table: for each operation of the capability table, each
argument that takes an identifier, an integer, a JSON value, a time or an
archive, the family table it draws from and a builder that puts one value in
that slot of an otherwise valid call against the prepared store
(:func:`prepare`). :func:`convledger_conformance.hostile.corpus.corpus`
draws the cases from it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from convledger.projections.named import counting
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.transitions import Accept, Acquire, Compact, Fence, Operation, Recover
from convledger.store import Capability, LedgerStore
from convledger_conformance.hostile.corpus import (
    ARCHIVES,
    CONVERSATION,
    IDENTIFIERS,
    INTEGERS,
    JSON_VALUES,
    OVERSIZED_ARCHIVES,
    OVERSIZED_BUNDLES,
    OVERSIZED_JSON,
    PER_OPERATION,
    PROJECTION,
    RUN,
    SEED,
    SPILL,
    TIMES,
    TOTAL,
    WINDOW_BOUNDS,
    Call,
    Case,
)
from convledger_conformance.support import STAMP, draft, drafts

RUNTIME: Final = "h-rt"
"""The conversation of the prepared run (transitions keep their own ledger)."""

Build = Callable[[Any], Call]
Family = Mapping[str, tuple[tuple[str, ...], Callable[[Mapping[str, int], random.Random], object]]]


@attrs.frozen
class Slot:
    """One argument of one operation: its family of values and the call that carries one."""

    operation: str
    capability: Capability
    name: str
    family: Family
    build: Build = attrs.field(repr=False)
    oversized: Family = attrs.field(factory=dict)


def _accept(**changes: object) -> Accept:
    fields: dict[str, Any] = {"idempotency_key": "hk", "input_id": "hi", "run_id": "hr",
                              "assistant_message_id": "ha", "message": {"text": "x"}}
    fields.update(changes)
    return Accept(**fields)


def _transit(transition: object, *, conversation: object = RUNTIME, event_id: object = "h-ev",
             occurred_at: object = STAMP) -> Call:
    return lambda s: s.transition(conversation, transition, event_id=event_id,
                                  occurred_at=occurred_at)


def _fence(**changes: object) -> Fence:
    fields: dict[str, Any] = {"owner": "o", "revision": 1, "fencing_token": 1}
    fields.update(changes)
    return Fence(**fields)


def _put(**changes: object) -> Call:
    args: dict[str, Any] = {"conversation_id": CONVERSATION, "media_type": "text/plain",
                            "operation": _operation({}), "reference": "h-new", "event_id": "h-put",
                            "occurred_at": STAMP}
    args.update(changes)
    conversation = args.pop("conversation_id")
    return lambda s: s.put_spill(conversation, b"data", **args)


def _operation(authorization: object) -> dict[str, Any]:
    return {"operationId": "h-op", "authorization": authorization}


def _slot(operation: str, capability: Capability, name: str, family: Family, build: Build,
          oversized: Family | None = None) -> Slot:
    return Slot(operation, capability, name, family, build, dict(oversized or {}))


L, T, P, J, S, Q = (Capability.LEDGER, Capability.TRANSITIONS, Capability.PURGE,
                    Capability.PROJECTIONS, Capability.SPILLS, Capability.SEARCH)
ID, INT, JS, TM, AR, WIN = IDENTIFIERS, INTEGERS, JSON_VALUES, TIMES, ARCHIVES, WINDOW_BOUNDS
BIG_JS, BIG_AR, BIG_BU = OVERSIZED_JSON, OVERSIZED_ARCHIVES, OVERSIZED_BUNDLES

SLOTS: Final[tuple[Slot, ...]] = (
    _slot("append", L, "conversationId", ID, lambda v: lambda s: s.append(v, [draft("h-n")])),
    _slot("append", L, "eventId", ID, lambda v: lambda s: s.append(CONVERSATION, [draft(v)])),
    _slot("append", L, "kind", ID, lambda v: lambda s: s.append(CONVERSATION, [draft("h-n",
                                                                                  kind=v)])),
    _slot("append", L, "occurredAt", TM,
          lambda v: lambda s: s.append(CONVERSATION, [draft("h-n", occurred_at=v)])),
    _slot("append", L, "payload", JS, lambda v: lambda s: s.append(CONVERSATION, [draft("h-n",
                                                                                  v)]), BIG_JS),
    _slot("append", L, "schemaVersion", INT,
          lambda v: lambda s: s.append(CONVERSATION, [draft("h-n", schema_version=v)])),
    _slot("append", L, "expectedHead", INT,
          lambda v: lambda s: s.append(CONVERSATION, [draft("h-n")], expected_head=v)),
    _slot("read", L, "conversationId", ID, lambda v: lambda s: s.read(v)),
    _slot("read", L, "fromSeq", WIN, lambda v: lambda s: s.read(CONVERSATION, from_seq=v)),
    _slot("read", L, "toSeq", WIN, lambda v: lambda s: s.read(CONVERSATION, to_seq=v)),
    _slot("read", L, "limit", INT, lambda v: lambda s: s.read(CONVERSATION, limit=v)),
    _slot("head", L, "conversationId", ID, lambda v: lambda s: s.head(v)),
    _slot("exportConversation", L, "conversationId", ID,
          lambda v: lambda s: s.export_conversation(v)),
    _slot("importConversation", L, "archive", AR, lambda v: lambda s: s.import_conversation(v),
          BIG_AR),
    _slot("transition", T, "conversationId", ID, lambda v: _transit(_accept(), conversation=v)),
    _slot("transition", T, "eventId", ID, lambda v: _transit(_accept(), event_id=v)),
    _slot("transition", T, "occurredAt", TM, lambda v: _transit(_accept(), occurred_at=v)),
    _slot("transition", T, "accept.idempotencyKey", ID,
          lambda v: _transit(_accept(idempotency_key=v))),
    _slot("transition", T, "accept.inputId", ID, lambda v: _transit(_accept(input_id=v))),
    _slot("transition", T, "accept.runId", ID, lambda v: _transit(_accept(run_id=v))),
    _slot("transition", T, "accept.assistantMessageId", ID,
          lambda v: _transit(_accept(assistant_message_id=v))),
    _slot("transition", T, "accept.message", JS, lambda v: _transit(_accept(message=v)), BIG_JS),
    _slot("transition", T, "acquire.owner", ID, lambda v: _transit(Acquire(RUN, v))),
    _slot("transition", T, "acquire.runId", ID, lambda v: _transit(Acquire(v, "o"))),
    _slot("transition", T, "operation.fence.owner", ID,
          lambda v: _transit(Operation(RUN, _fence(owner=v), {"op": "x"}))),
    _slot("transition", T, "operation.fence.revision", INT,
          lambda v: _transit(Operation(RUN, _fence(revision=v), {"op": "x"}))),
    _slot("transition", T, "operation.fence.fencingToken", INT,
          lambda v: _transit(Operation(RUN, _fence(fencing_token=v), {"op": "x"}))),
    _slot("transition", T, "operation.operation", JS,
          lambda v: _transit(Operation(RUN, _fence(), v))),
    _slot("transition", T, "recover.revision", INT,
          lambda v: _transit(Recover(RUN, v, "abandon", {}))),
    _slot("transition", T, "recover.evidence", JS,
          lambda v: _transit(Recover(RUN, 1, "abandon", v))),
    _slot("transition", T, "compact.expectedVersion", INT,
          lambda v: _transit(Compact(v, "hi", "ha", "hs", {"text": "s"}))),
    _slot("transition", T, "compact.summaryMessageId", ID,
          lambda v: _transit(Compact(1, "hi", "ha", v, {"text": "s"}))),
    _slot("transition", T, "compact.summary", JS,
          lambda v: _transit(Compact(1, "hi", "ha", "hs", v))),
    _slot("loadRun", T, "conversationId", ID, lambda v: lambda s: s.load_run(v, RUN)),
    _slot("loadRun", T, "runId", ID, lambda v: lambda s: s.load_run(RUNTIME, v)),
    _slot("listActiveRuns", T, "conversationId", ID, lambda v: lambda s: s.list_active_runs(v)),
    _slot("loadSnapshot", T, "conversationId", ID, lambda v: lambda s: s.load_snapshot(v)),
    _slot("scanRecoverable", T, "after.conversationId", ID,
          lambda v: lambda s: s.scan_recoverable(after=RecoveryCursor(v, 1))),
    _slot("scanRecoverable", T, "after.ordinal", INT,
          lambda v: lambda s: s.scan_recoverable(after=RecoveryCursor(RUNTIME, v))),
    _slot("scanRecoverable", T, "limit", INT, lambda v: lambda s: s.scan_recoverable(limit=v)),
    _slot("purge", P, "conversationId", ID, lambda v: lambda s: s.purge(v)),
    _slot("catchUp", J, "conversationId", ID, lambda v: lambda s: s.catch_up(v, counting())),
    _slot("catchUp", J, "maxEvents", INT,
          lambda v: lambda s: s.catch_up(CONVERSATION, counting(), max_events=v)),
    _slot("loadCheckpoint", J, "conversationId", ID,
          lambda v: lambda s: s.load_checkpoint(v, PROJECTION)),
    _slot("loadCheckpoint", J, "name", ID, lambda v: lambda s: s.load_checkpoint(CONVERSATION, v)),
    _slot("projectionStatus", J, "conversationId", ID,
          lambda v: lambda s: s.projection_status(v, PROJECTION)),
    _slot("projectionStatus", J, "name", ID,
          lambda v: lambda s: s.projection_status(CONVERSATION, v)),
    _slot("putSpill", S, "conversationId", ID, lambda v: _put(conversation_id=v)),
    _slot("putSpill", S, "reference", ID, lambda v: _put(reference=v)),
    _slot("putSpill", S, "eventId", ID, lambda v: _put(event_id=v)),
    _slot("putSpill", S, "occurredAt", TM, lambda v: _put(occurred_at=v)),
    _slot("putSpill", S, "operation", JS, lambda v: _put(operation=_operation(v))),
    _slot("getSpill", S, "conversationId", ID,
          lambda v: lambda s: s.get_spill(v, SPILL, authorize=_grant)),
    _slot("getSpill", S, "reference", ID,
          lambda v: lambda s: s.get_spill(CONVERSATION, v, authorize=_grant)),
    _slot("deleteSpill", S, "reference", ID, lambda v: lambda s: s.delete_spill(
        CONVERSATION, v, event_id="h-del", occurred_at=STAMP)),
    _slot("deleteSpill", S, "eventId", ID, lambda v: lambda s: s.delete_spill(
        CONVERSATION, SPILL, event_id=v, occurred_at=STAMP)),
    _slot("deleteSpill", S, "occurredAt", TM, lambda v: lambda s: s.delete_spill(
        CONVERSATION, SPILL, event_id="h-del", occurred_at=v)),
    _slot("exportBundle", S, "conversationId", ID, lambda v: lambda s: s.export_bundle(v)),
    _slot("importBundle", S, "bundle", AR, lambda v: lambda s: s.import_bundle(v), BIG_BU),
    _slot("search", Q, "requester", ID, lambda v: lambda s: s.search(v, "word")),
    _slot("search", Q, "scope", ID, lambda v: lambda s: s.search(CONVERSATION, "word",
                                                                 scope=[v])),
    _slot("search", Q, "limit", INT, lambda v: lambda s: s.search(CONVERSATION, "word",
                                                                  limit=v)),
)


def _grant(_: object) -> bool:
    return True


VALID_CASES: Final[tuple[tuple[str, str, str, str, Call], ...]] = (
    ("head", "conversationId", "NUL inside", "LIM-003", lambda s: s.head("h\x00head\x00")),
    ("read", "conversationId", "NUL inside", "LIM-003", lambda s: s.read("h\x00read\x00")),
    ("read", "fromSeq", "10**10000", "LIM-007", lambda s: s.read(CONVERSATION,
                                                                  from_seq=10**10_000)),
    ("read", "toSeq", "2**64", "LIM-007", lambda s: s.read(CONVERSATION, to_seq=2**64)),
)
"""Valid on purpose: NUL in an id (LIM-003) and huge window bounds (LIM-007, LED-011)."""


def prepare(store: LedgerStore) -> None:
    """Conversation ``h``: two events, a spill and a checkpoint when declared; a run in ``h-rt``."""
    declared = store.capabilities
    store.append(CONVERSATION, drafts(CONVERSATION, 2))
    if Capability.TRANSITIONS in declared:
        s: Any = store
        s.transition(RUNTIME, Accept("k0", "i0", RUN, "a0", {"text": "hi"}), event_id="h-rt-1",
                     occurred_at=STAMP)
    if Capability.SPILLS in declared:
        s = store
        s.put_spill(CONVERSATION, b"spilled", media_type="text/plain", operation=_operation({}),
                    reference=SPILL, event_id="h-spill-1", occurred_at=STAMP)
    if Capability.PROJECTIONS in declared:
        s = store
        s.catch_up(CONVERSATION, counting(name=PROJECTION))


def _lazy(slot: Slot, make: Callable[[Mapping[str, int], random.Random], object],
          limits: Mapping[str, int], rng: random.Random) -> Call:
    return lambda s: slot.build(make(limits, rng))(s)


OVERSIZED_AT_SMOKE: Final = frozenset({("append", "payload"), ("importConversation", "archive")})
"""The slots whose oversized values are sent at smoke too: a payload of 16 MiB + 1 canonical
bytes (LIM-004) and the archives of 128 MiB + 1 (LIM-006, one of them canonical; each built
when run, about 0.3 s), so a store whose payload or archive limit is a little larger fails at
every profile (the bundle slot's 128 MiB + 1 and the other JSON slots wait for ci)."""


def corpus(profile: str, declared: frozenset[Capability],
           limits: Mapping[str, int]) -> tuple[Case, ...]:
    """The seeded cases for the operations ``declared`` (LIM-001 .. LIM-009).

    Per operation: every family of hostile values once (at smoke in one of the
    slots that take it, else in every slot), then random draws of a slot and a
    family until the profile's count per operation and its total are reached,
    then the oversized values (at smoke only in :data:`OVERSIZED_AT_SMOKE`) and the cases
    valid on purpose.
    """
    operations = sorted({slot.operation for slot in SLOTS if slot.capability in declared})
    total = TOTAL.get(profile, TOTAL["ci"])
    per_operation = max(PER_OPERATION.get(profile, PER_OPERATION["ci"]),
                        -(-total // len(operations)))
    cases: list[Case] = []
    for operation in operations:
        rng = random.Random(f"{SEED}:{operation}")
        slots = [slot for slot in SLOTS if slot.operation == operation]
        if profile == "smoke":  # every family once, in one of the slots that take it
            for family in sorted({name for slot in slots for name in slot.family}):
                slot = rng.choice([slot for slot in slots if family in slot.family])
                ids, make = slot.family[family]
                cases.append(Case(operation, slot.name, family, ids, "invalid_input",
                                  slot.build(make(limits, rng))))
        else:  # every family in every slot once
            for slot in slots:
                for family, (ids, make) in sorted(slot.family.items()):
                    cases.append(Case(operation, slot.name, family, ids, "invalid_input",
                                      slot.build(make(limits, rng))))
        # then random draws
        for _ in range(per_operation):
            slot = rng.choice(slots)
            family = rng.choice(sorted(slot.family))
            ids, make = slot.family[family]
            cases.append(Case(operation, slot.name, family, ids, "invalid_input",
                              slot.build(make(limits, rng))))
        for slot in slots:
            if profile == "smoke" and (slot.operation, slot.name) not in OVERSIZED_AT_SMOKE:
                continue
            for family, (ids, make) in sorted(slot.oversized.items()):
                # built when run, so no more than one oversized value is alive at a time
                cases.append(Case(operation, slot.name, family, ids, "invalid_input",
                                  _lazy(slot, make, limits, rng)))
    for operation, slot_name, family, requirement, call in VALID_CASES:
        cases.append(Case(operation, slot_name, family, (requirement,), "ok", call))
    return tuple(cases)
