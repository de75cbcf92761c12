"""Checks of chapter LIM: hostile input gets a typed refusal and changes nothing.

:func:`run_corpus` runs the seeded corpus (:mod:`.operations`) against one
prepared store: every case must end as its expected kind (never ``internal``,
never an untyped exception, never a hang: each call runs under
:data:`CALL_BOUND`), and the store's state digest (:func:`digest`) must be
the same after every case as before the first. The figures it returns (cases
per operation, outcomes by kind) are what the report of issue 16 measured.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

import attrs
import cbor2

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.store import Capability, LedgerStore
from convledger_conformance.differences import first_difference
from convledger_conformance.hostile.corpus import CONVERSATION, PROJECTION, RUN, SPILL, Case
from convledger_conformance.hostile.operations import RUNTIME, corpus, prepare
from convledger_conformance.ledger.model import read_whole, state_digest
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import LIMIT as BY_NAME
from convledger_conformance.spec_values import LIMITS
from convledger_conformance.support import STAMP, draft, fail, fresh_store, refused, run_once
from convledger_conformance.wire.channel import (
    Exchange,
    _ask,
    _new_store,
    _raw,
    _refusal,
    _with_channel,
)

CALL_BOUND: Final = 60.0
"""Seconds one hostile call may take (LIM-011): a bound on hangs, far above any honest call."""


MAX_FAILURES: Final = 10
"""A run stops after this many failed cases: the store is broken, the rest would only cost time."""


@attrs.frozen
class Tally:
    """What one run of the corpus measured."""

    per_operation: Mapping[str, int]
    outcomes: Mapping[str, int]
    failures: tuple[tuple[Case, str], ...]


def declared_limits(store: LedgerStore) -> Mapping[str, int]:
    """The limits the store declared (LIM-010), empty when it declares none."""
    value = getattr(store, "declared_limits", None)
    return value if isinstance(value, Mapping) else {}


def digest(store: LedgerStore) -> tuple[object, ...]:
    """Everything of the prepared conversations a later call can observe (ERR-004, LIM-011)."""
    declared = store.capabilities
    s: Any = store
    # each part labelled, so that first_difference names the part that changed
    parts: list[object] = [("ledger", state_digest(store, [CONVERSATION, RUNTIME])),
                           ("export", store.export_conversation(CONVERSATION))]
    if Capability.TRANSITIONS in declared:
        parts += [("load_run", s.load_run(RUNTIME, RUN)),
                  ("list_active_runs", s.list_active_runs(RUNTIME)),
                  ("load_snapshot", s.load_snapshot(RUNTIME)),
                  ("scan_recoverable", s.scan_recoverable())]
    if Capability.SPILLS in declared:
        parts.append(("get_spill", s.get_spill(CONVERSATION, SPILL, authorize=lambda _: True)))
    if Capability.PROJECTIONS in declared:
        parts += [("load_checkpoint", s.load_checkpoint(CONVERSATION, PROJECTION)),
                  ("projection_status", s.projection_status(CONVERSATION, PROJECTION))]
    return tuple(parts)


def _outcome(case: Case, store: LedgerStore) -> str:
    """``ok``, the refusal's kind, ``untyped TYPE`` or ``hang``, under :data:`CALL_BOUND`."""
    result: list[str] = []

    def call() -> None:
        try:
            case.call(store)
        except LedgerError as error:
            result.append(error.kind)
        except Exception as error:
            result.append(f"untyped {type(error).__name__}")
        else:
            result.append("ok")

    worker = threading.Thread(target=call, name="hostile-call", daemon=True)
    worker.start()
    worker.join(CALL_BOUND)
    return result[0] if result else "hang"


def run_corpus(store: LedgerStore, profile: str) -> Tally:
    """Run every case of the corpus on ``store`` (prepared here) and tally the outcomes."""
    prepare(store)
    before: tuple[object, ...] | None = digest(store)
    cases = corpus(profile, store.capabilities, declared_limits(store))
    outcomes: Counter[str] = Counter()
    failures: list[tuple[Case, str]] = []
    for case in cases:
        outcome = _outcome(case, store)
        outcomes[outcome] += 1
        if outcome == "hang":
            failures.append((case, f"no answer within {CALL_BOUND} s"))
            break
        if outcome != case.expect:
            failures.append((case, f"ended as {outcome}, expected {case.expect}"))
            if len(failures) >= MAX_FAILURES:
                break
            # what this case changed is its own failure: later cases are judged by outcome only
            # (the digest of a store holding oversized values would cost more than the corpus)
            before = None
        elif before is not None:
            changed = first_difference(before, digest(store))
            if changed is not None:
                failures.append((case, f"the store changed (ERR-004) at {changed}"))
                break
    return Tally(dict(Counter(case.operation for case in cases)), dict(outcomes), tuple(failures))


@check(
    "LIM-001", "LIM-002", "LIM-004", "LIM-005", "LIM-006", "LIM-007", "LIM-008", "LIM-011",
    # every declared operation gets the corpus; the ids hold for the ledger's alone
    optional=(Capability.TRANSITIONS, Capability.PURGE, Capability.PROJECTIONS,
              Capability.SPILLS, Capability.SEARCH),
)
def check_hostile_corpus(ctx: CheckContext) -> None:
    """LIM-001 .. LIM-011: every case of the seeded corpus ends as its kind, changing nothing."""

    def body(store: LedgerStore) -> None:
        tally = run_corpus(store, ctx.profile)
        if tally.failures:
            ids = sorted({i for case, _ in tally.failures for i in case.ids} | {"LIM-011"})
            shown = "; ".join(f"{case.name}: {why}" for case, why in tally.failures[:8])
            fail(ids, f"{len(tally.failures)} of {sum(tally.per_operation.values())} hostile "
                      f"cases failed: {shown}")

    run_once(ctx, body)


@check("LIM-001", "LIM-003", "LIM-004", "LIM-005", "LIM-009")
def check_limits_reached(ctx: CheckContext) -> None:
    """LIM-001, LIM-003 .. LIM-005, LIM-009: at the limits (with NUL, a leap second) accepted."""

    def body(store: LedgerStore) -> None:
        limits = declared_limits(store)
        size = max(limits.get("identifierBytes", 0), BY_NAME["identifierBytes"].value)
        longest = "é" * (size // 2)
        deep: Any = 0
        for _ in range(BY_NAME["nestingDepth"].value - 1):  # the payload's value adds a level
            deep = [deep]
        cases = (
            ("LIM-001", longest, "e" + "x" * (size - 1)),
            ("LIM-003", "a\x00b", "\x00"),
        )
        for ids, conversation, event_id in cases:
            stored = _accepted(lambda c=conversation, e=event_id: store.append(c, [draft(e)]),
                               ids, f"append to a conversation id of {len(conversation)} chars")
            back = read_whole(store, conversation)
            if [e.canonical_bytes() for e in back] != [e.canonical_bytes() for e in stored]:
                fail(ids, "an event at the limit did not read back unchanged")
        _accepted(lambda: store.append("lim-deep", [draft("lim-deep-1", deep)]), "LIM-005",
                  "a payload nested exactly at the limit")
        exported = store.export_conversation("lim-deep")
        if canonical.decode(exported) is None:
            fail("LIM-005", "the archive of a payload at the depth limit is empty")
        # LIM-004: a payload of exactly the limit's canonical bytes (the store's, if raised)
        payload_bytes = max(limits.get("payloadBytes", 0), BY_NAME["payloadBytes"].value)
        empty = len(canonical.encode({"name": "slot", "version": 1, "value": "",
                                      "actor": "conformance"}))
        full: JsonValue = {"name": "slot", "version": 1, "value": "x" * (payload_bytes - empty),
                             "actor": "conformance"}
        _accepted(lambda: store.append("lim-size", [draft("lim-size-1", payload=full)]),
                  "LIM-004", "a payload of exactly the limit's canonical bytes")
        with fresh_store(ctx) as target:  # LIM-005 bounds an imported event's payload too
            _accepted(lambda: target.import_conversation(exported), "LIM-005",
                      "the import of an archive whose payload is nested exactly at the limit")
        leap = "2016-12-31T23:59:60Z"
        (event,) = _accepted(lambda: store.append("lim-leap", [draft("lim-leap-1",
                                                                      occurred_at=leap)]),
                             "LIM-009", "a leap second")
        if event.occurred_at != leap:
            fail("LIM-009", f"a leap second came back as {event.occurred_at!r}")
        refused(lambda: store.append("lim-leap", [draft("lim-leap-2",
                                                        occurred_at="2016-12-31T23:59:61Z")]),
                "invalid_input", "LIM-009", "second 61", store=store, touched=["lim-leap"])

    run_once(ctx, body)


def _accepted(call: Any, ids: str, what: str) -> Any:
    try:
        return call()
    except LedgerError as error:
        fail(ids, f"{what}: refused as {error.kind} ({error!r})")


@check("LIM-010")
def check_declared_limits(ctx: CheckContext) -> None:
    """LIM-010: a store declares only limits it may raise, and never below the chapter's values."""

    def body(store: LedgerStore) -> None:
        raisable = {limit.name: limit.value for limit in LIMITS if limit.declare}
        for name, value in declared_limits(store).items():
            if name not in raisable:
                fail("LIM-010", f"the store declares limit {name!r}, which no store may change")
            if isinstance(value, bool) or not isinstance(value, int) or value < raisable[name]:
                fail("LIM-010", f"the store declares {name} = {value!r}, below the chapter's "
                                f"{raisable[name]}")

    run_once(ctx, body)


def _text_frame(ident: int) -> bytes:
    """A request whose conversation id is a CBOR text string that is not valid UTF-8."""
    body = cbor2.dumps({"id": ident, "op": "head", "args": {"store": 1, "conversationId": "XX"}},
                       canonical=True)
    return _raw(body.replace(b"bXX", b"b\xff\xfe"))


@check("LIM-012")
def check_wire_hostile_frames(ctx: CheckContext) -> None:
    """LIM-012: undecodable frames and values beyond limits are invalid_input; serving goes on."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        (bad_text,) = exchange(_text_frame(77), 1)
        _refusal(bad_text, "invalid_input", "LIM-012", "a text string that is not UTF-8")
        deep: object = 0
        for _ in range(2_000):
            deep = [deep]
        (too_deep,) = exchange(_raw(cbor2.dumps({"id": 78, "op": "head", "args": {
            "store": handle, "conversationId": deep}})), 1)
        _refusal(too_deep, "invalid_input", "LIM-012", "a frame nested 2,000 deep")
        for name, args in (
            ("a limit of 10,000 digits", {"conversationId": "c", "limit": 10**10_000}),
            ("a fromSeq of -(10**5000)", {"conversationId": "c", "fromSeq": -(10**5_000)}),
            ("an oversized conversation id", {"conversationId": "x" * 100_000}),
        ):
            _refusal(_ask(exchange, "read", "LIM-012", store=handle, **args), "invalid_input",
                     "LIM-012", name)
        payload = {"name": "slot", "version": 1, "value": 10**9_000, "actor": "conformance"}
        refusal = _ask(exchange, "append", "LIM-012", store=handle, conversationId="c", drafts=[
            {"eventId": "e", "kind": "state/set", "occurredAt": STAMP, "payload": payload,
             "schemaVersion": 1, "ignorable": False}])
        _refusal(refusal, "invalid_input", "LIM-012", "a payload integer of 9,000 digits")
        after = _ask(exchange, "head", "LIM-012", store=handle, conversationId="c")
        if after.get("ok") != 0:
            fail("LIM-012", f"the session is not usable after hostile frames: {after!r}")

    _with_channel(ctx, body)
