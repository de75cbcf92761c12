"""What the checks share: fresh stores, property runs, and expectations on refusals.

A check names, in every :class:`CheckFailure` it raises, only ids it declares
in its ``@check``: the runner fails exactly those (and all of the check's ids
when a failure names one it does not cover).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, NoReturn, TypeVar

from hypothesis import given
from hypothesis import strategies as st

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.store import LedgerStore
from convledger_conformance.differences import first_difference
from convledger_conformance.ledger.model import (
    LedgerModel,
    Refusal,
    archive_bytes,
    draft_wire,
    envelope_bytes,
    read_whole,
    state_digest,
)
from convledger_conformance.profiles import scaled
from convledger_conformance.registry import CheckContext, CheckFailure, HelperBroken

T = TypeVar("T")

STAMP = "2024-05-01T12:00:00.250+02:00"
"""An occurredAt for drafts whose time does not matter."""


NOT_FRESH: str = "not new and empty:"
"""Opens the message of a fresh-store failure that proved the stores are not new and empty.

The runner stops the run on such a failure only; a store whose ``head`` or
``append`` itself breaks fails the check too, but the run goes on, so that
every check can name what it found broken (a skeleton store names its hooks).
"""


def fail(ids: str | Iterable[str], message: str) -> NoReturn:
    """Raise the failure of ``ids``."""
    named = (ids,) if isinstance(ids, str) else tuple(dict.fromkeys(ids))
    raise CheckFailure(named, message)


BYTES_AROUND: Final = 40
"""How many bytes either side of the first difference a byte mismatch shows."""


def byte_difference(expected: object, got: object) -> str:
    """Where two archives (or any byte strings) first differ, with both sides around it."""
    if not isinstance(expected, bytes) or not isinstance(got, bytes):
        return f"expected {expected!r:.200}, got {got!r:.200}"
    offset = next((n for n, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
                  min(len(expected), len(got)))
    start, end = max(0, offset - BYTES_AROUND), offset + BYTES_AROUND
    return (f"first difference at byte offset {offset} (expected {len(expected)} bytes, got "
            f"{len(got)}): expected ...{expected[start:end]!r}..., got ...{got[start:end]!r}...")


def expect_same_bytes(ids: str | Iterable[str], what: str, *, expected: object,
                      got: object) -> None:
    """Fail ``ids`` unless ``got`` is ``expected``, showing the first differing byte (issue 20)."""
    if got != expected:
        fail(ids, f"{what}: {byte_difference(expected, got)}")


@contextlib.contextmanager
def fresh_store(ctx: CheckContext) -> Iterator[LedgerStore]:
    """A new empty store from the factory, closed afterwards."""
    store = ctx.factory()
    try:
        yield store
    finally:
        store.close()


def run_property(
    ctx: CheckContext,
    body: Callable[..., None],
    *strategies: st.SearchStrategy[Any],
    share: float = 1.0,
) -> None:
    """Run ``body(store, *values)`` on a fresh store for every example of ``strategies``.

    ``share`` scales the profile's example count for heavy bodies.
    """

    def example(*values: object) -> None:
        with fresh_store(ctx) as store:
            body(store, *values)

    # Hypothesis names the drawn values after body's parameters (all but the store).
    parameters = list(inspect.signature(body).parameters.values())[1:]
    example.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    example.__name__ = example.__qualname__ = body.__name__
    scaled(ctx.profile, share=share)(given(*strategies)(example))()


def run_once(ctx: CheckContext, body: Callable[[LedgerStore], None]) -> None:
    """Run ``body`` once on a fresh store (for checks without generated data)."""
    with fresh_store(ctx) as store:
        body(store)


def refused(
    call: Callable[[], object],
    kind: str,
    ids: str | Sequence[str],
    what: str,
    *,
    store: LedgerStore | None = None,
    touched: Iterable[str] = (),
    unchanged: str | Sequence[str] = (),
) -> LedgerError:
    """Expect ``call`` to raise a ``LedgerError`` of ``kind``, else fail ``ids``.

    With ``store``, the conversations ``touched`` must read the same afterwards;
    a change fails ``unchanged`` (default: ``ids``).
    """
    touched = list(touched)
    before = state_digest(store, touched) if store is not None else None
    try:
        result = call()
    except LedgerError as error:
        if error.kind != kind:
            fail(ids, f"{what}: expected a refusal of kind {kind!r}, got {error.kind!r} "
                      f"({error!r})")
        caught = error
    except HelperBroken:
        raise
    except Exception as error:
        raise CheckFailure(
            (ids,) if isinstance(ids, str) else tuple(ids),
            f"{what}: expected a ledger error of kind {kind!r}, got {error!r}",
        ) from error
    else:
        fail(ids, f"{what}: expected a refusal of kind {kind!r}, got it accepted "
                  f"({result!r:.300})")
    if store is not None:
        changed = first_difference(before, state_digest(store, touched))
        if changed is not None:
            fail(unchanged or ids, f"{what}: the refusal changed the ledger at {changed}")
    return caught


def accepted(call: Callable[[], T], ids: str | Sequence[str], what: str) -> T:
    """Expect ``call`` to succeed; a refusal or crash fails ``ids``."""
    try:
        return call()
    except HelperBroken:
        raise
    except Exception as error:
        raise CheckFailure(
            (ids,) if isinstance(ids, str) else tuple(ids),
            f"{what}: expected it accepted, got refused with {error!r}",
        ) from error


class _Slot:
    """The default payload of :func:`draft`: a ``state/set`` holding ``value``."""


SLOT = _Slot()


def untyped(store: LedgerStore) -> Any:
    """The store, for calls that pass deliberately ill-typed arguments."""
    return store


def draft(
    event_id: str,
    value: JsonValue = None,
    *,
    kind: str = "state/set",
    payload: JsonValue | _Slot = SLOT,
    occurred_at: str = STAMP,
    schema_version: int = 1,
    ignorable: bool = False,
) -> EventDraft:
    """A draft, by default a ``state/set`` whose ``value`` is ``value``."""
    if isinstance(payload, _Slot):
        payload = {"name": "slot", "version": 1, "value": value, "actor": "conformance"}
    return EventDraft(
        event_id=event_id,
        kind=kind,
        occurred_at=occurred_at,
        payload=payload,
        schema_version=schema_version,
        ignorable=ignorable,
    )


def drafts(prefix: str, count: int) -> list[EventDraft]:
    """``count`` valid drafts with eventIds ``prefix-1`` .. ``prefix-count``."""
    return [draft(f"{prefix}-{n}", n) for n in range(1, count + 1)]


def wires(conversation_id: str, batch: Sequence[EventDraft]) -> list[dict[str, object]]:
    """The wire envelopes of ``batch`` at seqs 1..n of ``conversation_id``."""
    return [draft_wire(d, conversation_id, seq) for seq, d in enumerate(batch, start=1)]


def archive(conversation_id: str, events: Sequence[dict[str, object]]) -> bytes:
    """Canonical archive bytes of wire envelopes."""
    return archive_bytes(conversation_id, (canonical.encode(w) for w in events))


def document(conversation_id: str, events: Sequence[dict[str, object]]) -> dict[str, object]:
    """An archive document to change before encoding."""
    return {
        "format": "convledger.archive",
        "formatVersion": 1,
        "conversationId": conversation_id,
        "events": list(events),
        "companions": {},
    }


def ledger_bytes(store: LedgerStore, conversation_id: str) -> tuple[bytes, ...]:
    """The canonical bytes of every envelope of one conversation, read in one page."""
    return tuple(envelope_bytes(e) for e in read_whole(store, conversation_id))


def expect_model(model: LedgerModel, outcome: T | Refusal) -> T:
    """The model's result of a call the check built to succeed."""
    if isinstance(outcome, Refusal):
        raise AssertionError(f"the check built a call the model refuses: {outcome!r}")
    return outcome
