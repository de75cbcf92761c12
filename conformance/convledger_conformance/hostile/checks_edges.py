"""Four boundaries only long machine runs used to reach, each checked head-on (issue 37).

* ``refused_import_frees_its_event_ids`` (ARC-013): an import (of an archive,
  and of a bundle where ``spills`` is declared) refused by the store's state (an
  eventId stored elsewhere, an occupied conversation) leaves no eventId behind:
  the same eventIds then append elsewhere and import again.
* ``status_right_after_append`` (PRJ-014): ``projection_status`` reports the
  head as it is at once after an append, an accept or a spill put (every write
  that adds an event), before any catch-up and after one.
* ``transition_event_id_stored_elsewhere`` (TRN-008): a transition whose
  eventId is stored in another conversation (or in its own) is refused with
  kind ``duplicate``, never answered with the ``duplicate`` outcome, and
  writes nothing.
* ``identifiers_at_the_byte_limit`` (LIM-001, LIM-010): conversationIds and
  eventIds of two-, three- and four-byte characters exactly at the store's
  ``identifierBytes`` are accepted and read back; one byte more, and as many
  characters as one byte more would take in ASCII, are refused.

Each failure names the call, what was expected and what came back.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

from convledger.errors import LedgerError
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.projections.named import counting
from convledger.runtime import Accept, Acquire
from convledger.store import Capability, LedgerStore
from convledger_conformance.hostile.checks import declared_limits
from convledger_conformance.hostile.corpus import limit
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    STAMP,
    accepted,
    archive,
    draft,
    fail,
    fresh_store,
    refused,
    wires,
)

# -- ARC-013 -------------------------------------------------------------------------------------

IMPORT_IDS: Final = ("ARC-013", "ARC-009", "ARC-010", "SPL-055")


def _archive_of(conversation: str, event_ids: list[str]) -> bytes:
    return archive(conversation, wires(conversation, [draft(e) for e in event_ids]))


@check(*IMPORT_IDS, optional=(Capability.SPILLS,))
def check_refused_import_frees_its_event_ids(ctx: CheckContext) -> None:
    """ARC-013: after an import refused for an eventId stored elsewhere or an occupied
    conversation, the archive's other eventIds are free: they append and import again."""
    with fresh_store(ctx) as store:
        accepted(partial(store.append, "edge-other", [draft("edge-stored")]), IMPORT_IDS,
                 "append of edge-stored")
        clash = _archive_of("edge-imp", ["edge-i1", "edge-i2", "edge-stored"])
        refused(partial(store.import_conversation, clash), "duplicate", IMPORT_IDS,
                "import whose last eventId is stored in another conversation", store=store,
                touched=["edge-imp", "edge-other"])
        accepted(partial(store.append, "edge-free", [draft("edge-i1")]), IMPORT_IDS,
                 "append of edge-i1, an eventId of the refused import (ARC-013: it left none)")
        accepted(partial(store.import_conversation,
                         _archive_of("edge-imp", ["edge-i2", "edge-i3"])), IMPORT_IDS,
                 "import of edge-i2 again, an eventId of the refused import")
        occupied = _archive_of("edge-imp", ["edge-i4", "edge-i5"])
        refused(partial(store.import_conversation, occupied), "conflict", IMPORT_IDS,
                "import into a conversation that has events", store=store,
                touched=["edge-imp"])
        accepted(partial(store.append, "edge-free", [draft("edge-i4"), draft("edge-i5")]),
                 IMPORT_IDS, "append of edge-i4 and edge-i5, eventIds of the refused import")
        heads = {c: store.head(c) for c in ("edge-imp", "edge-free", "edge-other")}
        want = {"edge-imp": 2, "edge-free": 3, "edge-other": 1}
        if heads != want:
            fail(IMPORT_IDS, f"heads after the refused and the accepted imports: expected "
                             f"{want}, got {heads}")
        if Capability.SPILLS in store.capabilities:
            _refused_bundle_frees_its_event_ids(store)


def _bundle_of(conversation: str, event_ids: list[str]) -> bytes:
    """A bundle of ``conversation`` (events, then one spill), made by the reference store."""
    source = MemoryStore()
    source.append(conversation, [draft(e) for e in event_ids[:-1]])
    source.put_spill(conversation, b"edge", media_type="text/plain",
                     operation={"operationId": "edge-op", "authorization": {}},
                     reference="edge-ref", event_id=event_ids[-1], occurred_at=STAMP)
    return source.export_bundle(conversation)


def _refused_bundle_frees_its_event_ids(store: LedgerStore) -> None:
    """ARC-013, SPL-055: the same for bundles, refused for a stored eventId and for an
    occupied conversation."""
    spills = require(store, Capability.SPILLS)
    accepted(partial(store.append, "edge-other", [draft("edge-stored-2")]), IMPORT_IDS,
             "append of edge-stored-2")
    clash = _bundle_of("edge-bun", ["edge-b1", "edge-stored-2", "edge-b2"])
    refused(partial(spills.import_bundle, clash), "duplicate", IMPORT_IDS,
            "bundle import whose second eventId is stored in another conversation",
            store=store, touched=["edge-bun", "edge-other"])
    accepted(partial(store.append, "edge-free", [draft("edge-b1")]), IMPORT_IDS,
             "append of edge-b1, an eventId of the refused bundle (ARC-013: it left none)")
    accepted(partial(spills.import_bundle, _bundle_of("edge-bun", ["edge-b3", "edge-b2"])),
             IMPORT_IDS, "bundle import of edge-b2 again, an eventId of the refused bundle")
    occupied = _bundle_of("edge-bun", ["edge-b4", "edge-b5"])
    refused(partial(spills.import_bundle, occupied), "conflict", IMPORT_IDS,
            "bundle import into a conversation that has events", store=store,
            touched=["edge-bun"])
    accepted(partial(store.append, "edge-free", [draft("edge-b4"), draft("edge-b5")]),
             IMPORT_IDS, "append of edge-b4 and edge-b5, eventIds of the refused bundle")


# -- PRJ-014 -------------------------------------------------------------------------------------

STATUS_IDS: Final = ("PRJ-014",)


def _event_writes(store: LedgerStore) -> list[tuple[str, Callable[[int], object]]]:
    """Every write that adds one event to ``edge-status``, of each capability declared."""
    writes: list[tuple[str, Callable[[int], object]]] = [
        ("append", lambda n: store.append("edge-status", [draft(f"edge-s{n}")]))]
    declared = store.capabilities
    if Capability.TRANSITIONS in declared:
        runtime = require(store, Capability.TRANSITIONS)
        writes.append(("accept", lambda n: runtime.transition(
            "edge-status", Accept(f"es-k{n}", f"es-i{n}", f"es-r{n}", f"es-a{n}",
                                  {"text": "status"}),
            event_id=f"edge-t{n}", occurred_at=STAMP)))
    if Capability.SPILLS in declared:
        spills = require(store, Capability.SPILLS)
        writes.append(("put_spill", lambda n: spills.put_spill(
            "edge-status", b"status", media_type="text/plain",
            operation={"operationId": f"es-op{n}", "authorization": {}},
            reference=f"es-ref{n}", event_id=f"edge-p{n}", occurred_at=STAMP)))
    return writes


@check(*STATUS_IDS, capability=Capability.PROJECTIONS,
       optional=(Capability.TRANSITIONS, Capability.SPILLS))
def check_status_right_after_append(ctx: CheckContext) -> None:
    """PRJ-014: the head a status reports is the head right after each append, whether the
    projection has never caught up, has just caught up, or lags."""
    with fresh_store(ctx) as given:
        store = require(given, Capability.PROJECTIONS)
        definition = counting(name="edge.count")
        expected_upto = 0
        writes = _event_writes(given)
        for step in range(1, 3 * len(writes) + 1):
            label, write = writes[(step - 1) % len(writes)]
            accepted(partial(write, step), STATUS_IDS, f"{label} #{step}")
            status = store.projection_status("edge-status", "edge.count")
            got = (status.upto_seq, status.head)
            if got != (expected_upto, step):
                fail(STATUS_IDS, f"projection_status right after {label} #{step} (caught up "
                                 f"to {expected_upto}): expected uptoSeq {expected_upto} and "
                                 f"head {step}, got uptoSeq {got[0]} and head {got[1]}")
            if step % 3 == 2:
                accepted(partial(store.catch_up, "edge-status", definition), STATUS_IDS,
                         "catch_up")
                expected_upto = step


# -- TRN-008 -------------------------------------------------------------------------------------

EVENT_ID_IDS: Final = ("TRN-008", "LED-003")


def _expect_refused(store: LedgerStore, conversation: str, transition: object, event_id: str,
                    where: str) -> None:
    runtime = require(store, Capability.TRANSITIONS)
    before = (store.head(conversation), runtime.load_snapshot(conversation)
              if store.head(conversation) else None)
    try:
        outcome = runtime.transition(conversation, transition,  # type: ignore[arg-type]
                                     event_id=event_id, occurred_at=STAMP)
    except LedgerError as error:
        if error.kind != "duplicate":
            fail(EVENT_ID_IDS, f"{transition!r} in {conversation!r} with eventId {event_id!r} "
                               f"({where}): expected a refusal of kind 'duplicate', got "
                               f"{error.kind!r} ({error})")
    else:
        fail(EVENT_ID_IDS, f"{transition!r} in {conversation!r} with eventId {event_id!r} "
                           f"({where}): expected a refusal of kind 'duplicate', got the outcome "
                           f"{outcome.status.value} (version {outcome.version})")
    after = (store.head(conversation), runtime.load_snapshot(conversation)
             if store.head(conversation) else None)
    if after != before:
        fail(EVENT_ID_IDS, f"the refused {transition!r} in {conversation!r} wrote: expected head "
                           f"{before[0]}, got {after[0]}")


@check(*EVENT_ID_IDS, capability=Capability.TRANSITIONS)
def check_transition_event_id_stored_elsewhere(ctx: CheckContext) -> None:
    """TRN-008: an applicable transition whose eventId is stored (another conversation's event
    or transition, or its own conversation's) is refused with kind duplicate, writing nothing."""
    with fresh_store(ctx) as store:
        runtime = require(store, Capability.TRANSITIONS)
        accepted(partial(store.append, "edge-a", [draft("edge-appended")]), EVENT_ID_IDS,
                 "append")
        accepted(partial(runtime.transition, "edge-b", Accept("kb", "ib", "rb", "ab",
                                                              {"text": "b"}),
                         event_id="edge-b-accept", occurred_at=STAMP), EVENT_ID_IDS, "accept")
        new = Accept("kc", "ic", "rc", "ac", {"text": "c"})
        _expect_refused(store, "edge-c", new, "edge-appended",
                        "an appended event of another conversation, on a new conversation")
        _expect_refused(store, "edge-c", new, "edge-b-accept",
                        "a transition of another conversation, on a new conversation")
        accepted(partial(runtime.transition, "edge-c", new, event_id="edge-c-accept",
                         occurred_at=STAMP), EVENT_ID_IDS, "accept with a new eventId")
        acquire = Acquire("rc", "owner")
        for event_id, where in (("edge-appended", "an appended event of another conversation"),
                                ("edge-b-accept", "a transition of another conversation"),
                                ("edge-c-accept", "its own conversation's accept")):
            _expect_refused(store, "edge-c", acquire, event_id, where)
        later = Accept("kc2", "ic2", "rc2", "ac2", {"text": "c2"})
        _expect_refused(store, "edge-c", later, "edge-appended",
                        "an appended event of another conversation")


# -- LIM-001 -------------------------------------------------------------------------------------

LIMIT_IDS: Final = ("LIM-001", "LIM-010", "ENV-004", "ENV-005")
WIDE: Final = {2: "\u00e9", 3: "\u20ac", 4: "\U0001f600"}
"""A character of each UTF-8 width above one byte."""


def _of_bytes(size: int, width: int, tag: str) -> str:
    """An identifier of exactly ``size`` UTF-8 bytes, as many ``width``-byte characters as fit,
    ending in the ASCII ``tag`` padded to the remainder (at least one byte of it)."""
    count = (size - 1) // width
    rest = size - count * width
    return WIDE[width] * count + (tag * rest)[:rest]


@check(*LIMIT_IDS)
def check_identifiers_at_the_byte_limit(ctx: CheckContext) -> None:
    """LIM-001: identifiers of 2-, 3- and 4-byte characters at exactly identifierBytes are
    accepted and kept; one byte over is refused, though it has far fewer characters."""
    with fresh_store(ctx) as store:
        size = limit(declared_limits(store), "identifierBytes")
        for width in sorted(WIDE):
            at = _of_bytes(size, width, "c")
            event = _of_bytes(size, width, "e")
            accepted(partial(store.append, at, [draft(event)]), LIMIT_IDS,
                     f"append with conversationId and eventId of exactly {size} UTF-8 bytes "
                     f"({len(at)} characters of {width} bytes)")
            got = [envelope.event_id for envelope in read_whole(store, at)]
            if got != [event]:
                fail(LIMIT_IDS, f"read of the conversationId of {size} bytes ({width}-byte "
                                f"characters): expected [{event[:8]!r}...], got {got!r:.200}")
            over = _of_bytes(size + 1, width, "o")
            long_event = _of_bytes(size + 1, width, "f")
            refused(partial(store.append, f"edge-lim-{width}", [draft(long_event)]),
                    "invalid_input", LIMIT_IDS,
                    f"append with an eventId of {size + 1} UTF-8 bytes ({len(long_event)} "
                    f"characters of up to {width} bytes)", store=store,
                    touched=[f"edge-lim-{width}"])
            refused(partial(store.append, over, [draft(f"edge-lim-e{width}")]), "invalid_input",
                    LIMIT_IDS, f"append with a conversationId of {size + 1} UTF-8 bytes "
                               f"({len(over)} characters of up to {width} bytes)")
