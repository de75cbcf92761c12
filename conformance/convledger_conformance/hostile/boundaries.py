"""Boundary checks generated from the limits table (``spec/limits.json``, issue 20).

For every capability, one check is generated (:func:`_register`) from two
tables: the ``bounds`` other chapters state (:data:`convledger_conformance.spec_values.BOUNDS`,
called through :data:`CALLS`) and the identifier and time slots of the hostile
corpus (:data:`convledger_conformance.hostile.operations.SLOTS`). Each bound is
called with exactly its ``maximum`` and its ``minimum`` (both MUST be
accepted) and with ``maximum + 1`` and ``minimum - 1`` (both MUST be refused
with ``invalid_input``, changing nothing); each identifier slot is called with
an identifier of exactly the store's ``identifierBytes`` (LIM-001, LIM-010)
and each time slot with an ``occurredAt`` of exactly 64 bytes (LIM-008): an
answer of ``invalid_input`` there is a failure (another kind, such as
``not_found``, is the operation's own answer to a valid input).

A failure names the operation, the bound, the value sent, what was expected
and what came back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from convledger.errors import LedgerError
from convledger.projections.named import counting
from convledger.store import Capability, LedgerStore
from convledger_conformance.hostile.checks import declared_limits, digest
from convledger_conformance.hostile.corpus import CONVERSATION, IDENTIFIERS, TIMES, limit
from convledger_conformance.hostile.operations import SLOTS, Slot, prepare
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import BOUNDS, Bound
from convledger_conformance.support import STAMP, drafts, fail, fresh_store, run_once

Calls = Callable[[Any, int, str], object]
"""``call(store, value, tag)``: the operation with ``value`` in the bound's slot; ``tag`` is
unique per call, for the ids a call creates."""

AT_LIMIT_TIME: Final = "2024-01-01T00:00:00." + "0" * 43 + "Z"
"""An ``occurredAt`` of exactly 64 bytes (LIM-008)."""


def _media_type(size: int) -> str:
    """A valid media type of exactly ``size`` characters (SPL-004), a quoted parameter fills it."""
    head = 'text/plain; a="'
    return head + "x" * (size - len(head) - 1) + '"'


def _put(store: Any, tag: str, *, media_type: str = "text/plain",
         reference: str | None = None) -> object:
    return store.put_spill(CONVERSATION, b"data", media_type=media_type,
                           operation={"operationId": f"b-op-{tag}", "authorization": {}},
                           reference=f"b-ref-{tag}" if reference is None else reference,
                           event_id=f"b-ev-{tag}", occurred_at=STAMP)


def _wide(size: int) -> str:
    """One word of exactly ``size`` characters of one to four UTF-8 bytes each (LIM-013).

    A bound in characters counts code points: a store that counts UTF-8 bytes or UTF-16
    units refuses this word at the maximum, where an ASCII word of the same length passes.
    """
    letters = "w\u00e9\u4e2d\U0001d400"  # w, é, 中, 𝐀: 1, 2, 3 and 4 bytes, all letters
    return (letters * (size // len(letters) + 1))[:size]


@attrs.frozen
class Call:
    """How a bound's operation is called, and under which capability."""

    capability: Capability
    call: Calls = attrs.field(repr=False)


CALLS: Final[Mapping[str, Call]] = {
    "appendDrafts": Call(Capability.LEDGER,
                         lambda s, v, t: s.append(f"b-app-{t}", drafts(f"b-app-{t}", v))),
    "readLimit": Call(Capability.LEDGER, lambda s, v, t: s.read(CONVERSATION, limit=v)),
    "scanRecoverableLimit": Call(Capability.TRANSITIONS,
                                 lambda s, v, t: s.scan_recoverable(limit=v)),
    "catchUpMaxEvents": Call(Capability.PROJECTIONS, lambda s, v, t: s.catch_up(
        CONVERSATION, counting(name=f"b-max-{t}"), max_events=v)),
    "projectionNameChars": Call(Capability.PROJECTIONS, lambda s, v, t: s.catch_up(
        CONVERSATION, counting(name=(t[-1] * v)))),
    "mediaTypeChars": Call(Capability.SPILLS, lambda s, v, t: _put(s, t,
                                                                  media_type=_media_type(v))),
    "spillReferenceChars": Call(Capability.SPILLS, lambda s, v, t: _put(
        s, t, reference=(t[-1] * v))),
    "searchQueryChars": Call(Capability.SEARCH, lambda s, v, t: s.search(CONVERSATION,
                                                                         _wide(v))),
    "searchQueryWords": Call(Capability.SEARCH,
                             lambda s, v, t: s.search(CONVERSATION, " ".join(["w"] * v))),
    "searchScope": Call(Capability.SEARCH, lambda s, v, t: s.search(
        CONVERSATION, "word", scope=[f"b-scope-{n}" for n in range(v)])),
    "searchLimit": Call(Capability.SEARCH, lambda s, v, t: s.search(CONVERSATION, "word",
                                                                    limit=v)),
    "spillBytes": Call(Capability.SPILLS, lambda s, v, t: s.put_spill(
        CONVERSATION, b"\x00" * v, media_type="application/octet-stream",
        operation={"operationId": f"b-op-{t}", "authorization": {}}, reference=f"b-ref-{t}",
        event_id=f"b-ev-{t}", occurred_at=STAMP)),
}
"""Every bound of :data:`BOUNDS` by name (a test keeps the two tables' names equal)."""


def _answer(call: Callable[[], object]) -> str:
    """``ok``, the refusal's kind, or ``untyped NAME: message``."""
    try:
        call()
    except LedgerError as error:
        return error.kind
    except Exception as error:
        return f"untyped {type(error).__name__}: {error}"
    return "ok"


def _edges(bound: Bound) -> tuple[tuple[int, bool, str], ...]:
    """``(value, accepted, tag)``: the maximum and minimum accepted, one past each refused."""
    edges = [(bound.maximum, True, "m"), (bound.maximum + 1, False, "n")]
    if bound.minimum is not None:
        edges += [(bound.minimum, True, "l"), (bound.minimum - 1, False, "k")]
    return tuple(edges)


def _check_bound(store: LedgerStore, bound: Bound, call: Calls) -> None:
    for value, accepted, tag in _edges(bound):
        before = None if accepted else digest(store)
        answer = _answer(functools.partial(call, store, value, f"{bound.name}-{tag}"))
        shown = f"{bound.operation} with {bound.name} = {value} ({bound.unit})"
        if accepted and answer != "ok":
            fail(bound.requirement, f"{shown}, exactly at the "
                 f"{'maximum' if value == bound.maximum else 'minimum'}: expected it accepted, "
                 f"got {answer}")
        if not accepted and answer != "invalid_input":
            fail(bound.requirement, f"{shown}, one past the bound: expected invalid_input, "
                                    f"got {answer}")
        if before is not None and digest(store) != before:
            fail([bound.requirement, "ERR-004"], f"{shown} was refused but changed the store")


TIGHTER: Final[Mapping[tuple[str, str], str]] = {
    ("loadCheckpoint", "name"): "projectionNameChars",
    ("projectionStatus", "name"): "projectionNameChars",
    ("putSpill", "reference"): "spillReferenceChars",
    ("getSpill", "reference"): "spillReferenceChars",
    ("deleteSpill", "reference"): "spillReferenceChars",
}
"""Identifier slots a chapter bounds more tightly than LIM-001 (the tighter bound holds)."""

NOT_AT_THE_LIMIT: Final = frozenset({("append", "kind")})
"""A kind names a registered pair (KND-002): no kind of 1024 bytes can be appended."""

_BOUND = {bound.name: bound for bound in BOUNDS}


def _at_limit(slot: Slot, declared: Mapping[str, int]) -> tuple[str, str]:
    """The id and the value exactly at the limit of an identifier or time slot."""
    if slot.family is TIMES:
        return "LIM-008", AT_LIMIT_TIME
    size = limit(declared, "identifierBytes")
    tighter = TIGHTER.get((slot.operation, slot.name))
    if tighter is not None:
        return _BOUND[tighter].requirement, "x" * min(size, _BOUND[tighter].maximum)
    return "LIM-001", "x" * size


def _limit_value(slot: Slot, declared: Mapping[str, int]) -> str:
    return _at_limit(slot, declared)[1]


def _constant(value: str, _: Mapping[str, int]) -> str:
    return value


def _slot_answer(ctx: CheckContext, slot: Slot, value: Callable[[Mapping[str, int]], str]) -> str:
    with fresh_store(ctx) as store:
        prepare(store)
        return _answer(lambda: slot.build(value(declared_limits(store)))(store))


def _check_slots(ctx: CheckContext, capability: Capability) -> None:
    """Each slot: at the limit, the same answer as a short value, each on a fresh prepared store.

    The answer of the short value is the operation's answer to a valid input in the prepared
    state (``ok``, ``not_found``, or a refusal for another argument of the call); the value at
    the limit MUST get the same (the calls of one operation would collide on one store).
    """
    for slot in SLOTS:
        if (slot.capability != capability or slot.family not in (IDENTIFIERS, TIMES)
                or (slot.operation, slot.name) in NOT_AT_THE_LIMIT):
            continue
        short = STAMP if slot.family is TIMES else "x"
        expected = _slot_answer(ctx, slot, functools.partial(_constant, short))
        ident, _ = _at_limit(slot, {})
        answer = _slot_answer(ctx, slot, functools.partial(_limit_value, slot))
        if answer != expected:
            fail(ident, f"{slot.operation}({slot.name} = a value exactly at its limit): expected "
                        f"{expected} (the answer for {short!r}), got {answer}")


SCENE: Final = (Capability.TRANSITIONS, Capability.SPILLS, Capability.PROJECTIONS)
"""The capabilities the prepared store (:func:`prepare`) uses when they are declared."""


def _register(capability: Capability) -> None:
    bounds = [bound for bound in BOUNDS if CALLS[bound.name].capability == capability]
    ids = tuple(dict.fromkeys(["LIM-001", "LIM-008", *(b.requirement for b in bounds)]))

    def body(ctx: CheckContext) -> None:
        def run(store: LedgerStore) -> None:
            prepare(store)
            for bound in bounds:
                _check_bound(store, bound, CALLS[bound.name].call)

        run_once(ctx, run)
        _check_slots(ctx, capability)

    body.__name__ = f"check_boundaries_{capability.value}"
    body.__doc__ = (f"{', '.join(ids)}: every bound of {capability.value} operations from "
                    "spec/limits.json: at the limit accepted, one past refused.")
    # prepare() and digest() use the other capabilities when declared; the ids hold without them
    scene = tuple(c for c in SCENE if c != capability)
    check(*ids, capability=capability, optional=scene)(body)


for _capability in (Capability.LEDGER, Capability.TRANSITIONS, Capability.PURGE,
                    Capability.PROJECTIONS, Capability.SPILLS, Capability.SEARCH):
    _register(_capability)
