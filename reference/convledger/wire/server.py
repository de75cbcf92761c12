"""Serving a store over the wire protocol (chapter ``wire.md``).

Theory of operation
-------------------
:class:`WireServer` reads request frames from a binary stream and writes one
reply frame per request, in order (WIR-005). It holds any number of stores,
each under a handle that ``newStore`` (and ``reopen``) returns (WIR-020), so a
conformance run pays one process start and then one round trip per fresh
store. :data:`OPERATIONS` is the operation table: one entry per request type,
naming the capability it belongs to and the handler that decodes its
arguments, calls the store and encodes the result. A store operation becomes
available over the wire by adding one entry; capabilities without entries are
removed from every declaration the server sends (WIR-021), so it never claims
what it cannot serve.

Arguments are decoded without validation (:mod:`convledger.wire.values`): the
store refuses ill-typed ones exactly as it does in process. A refusal becomes
an ``error`` reply with its normative kind (WIR-008); any other exception of
the store becomes kind ``internal``, which no client takes for a refusal.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Final

import attrs

import convledger
from convledger.errors import InvalidInputError, LedgerError, NotSupportedError
from convledger.store import Capability, LedgerStore
from convledger.wire import values
from convledger.wire.frames import (
    EndOfStream,
    FrameError,
    FramingLost,
    encode_frame,
    read_frame,
    write_frame,
)

PROTOCOL_VERSION: Final = 1
"""WIR-006: the protocol version this module speaks."""

StoreMaker = Callable[[], LedgerStore]
Handler = Callable[[LedgerStore, dict[str, Any]], object]


@attrs.frozen
class Entry:
    """One request type of the operation table."""

    capability: Capability
    handler: Handler


def _kwargs(args: dict[str, Any], *names: tuple[str, str]) -> dict[str, Any]:
    """The keyword arguments of the wire members present in ``args`` (absent: the default)."""
    return {python: args[wire] for wire, python in names if wire in args}


def _append(store: LedgerStore, args: dict[str, Any]) -> object:
    placed = store.append(
        args.get("conversationId"),  # type: ignore[arg-type]
        values.drafts_in(args.get("drafts")),  # type: ignore[arg-type]
        **_kwargs(args, ("expectedHead", "expected_head")),
    )
    return [values.envelope_out(envelope) for envelope in placed]


def _read(store: LedgerStore, args: dict[str, Any]) -> object:
    page = store.read(
        args.get("conversationId"),  # type: ignore[arg-type]
        **_kwargs(args, ("fromSeq", "from_seq"), ("toSeq", "to_seq"), ("limit", "limit")),
    )
    return values.page_out(page)


def _conversation(args: dict[str, Any]) -> Any:
    return args.get("conversationId")


def _transition(store: LedgerStore, args: dict[str, Any]) -> object:
    outcome = store.transition(
        _conversation(args),
        values.transition_in(args.get("transition")),  # type: ignore[arg-type]
        event_id=args.get("eventId"),  # type: ignore[arg-type]
        occurred_at=args.get("occurredAt"),  # type: ignore[arg-type]
    )
    return values.outcome_out(outcome)


def _scan(store: LedgerStore, args: dict[str, Any]) -> object:
    kwargs = _kwargs(args, ("limit", "limit"))
    if "after" in args:
        kwargs["after"] = values.cursor_in(args["after"])
    return values.recovery_page_out(store.scan_recoverable(**kwargs))


OPERATIONS: Final[dict[str, Entry]] = {
    "append": Entry(Capability.LEDGER, _append),
    "read": Entry(Capability.LEDGER, _read),
    "head": Entry(Capability.LEDGER, lambda s, a: s.head(_conversation(a))),
    "exportConversation": Entry(
        Capability.LEDGER, lambda s, a: s.export_conversation(_conversation(a))
    ),
    "importConversation": Entry(
        Capability.LEDGER,
        lambda s, a: values.import_report_out(s.import_conversation(a.get("archive"))),  # type: ignore[arg-type]
    ),
    "transition": Entry(Capability.TRANSITIONS, _transition),
    "loadRun": Entry(
        Capability.TRANSITIONS,
        lambda s, a: values.run_out(s.load_run(_conversation(a), a.get("runId"))),  # type: ignore[arg-type]
    ),
    "listActiveRuns": Entry(
        Capability.TRANSITIONS,
        lambda s, a: [values.run_out(run) for run in s.list_active_runs(_conversation(a))],
    ),
    "loadSnapshot": Entry(
        Capability.TRANSITIONS,
        lambda s, a: values.snapshot_out(s.load_snapshot(_conversation(a))),
    ),
    "scanRecoverable": Entry(Capability.TRANSITIONS, _scan),
    "purge": Entry(Capability.PURGE, lambda s, a: s.purge(_conversation(a)).value),
}
"""WIR-013, WIR-015: the store operations the protocol carries, by request type.

``newStore``, ``reopen``, ``close`` and ``hello`` are handled by the server
itself; ``reopen`` belongs to capability ``persistence``.
"""

CARRIED: Final = frozenset(
    {entry.capability for entry in OPERATIONS.values()} | {Capability.PERSISTENCE}
)
"""WIR-021: the capabilities whose every operation the protocol carries."""


def declared_over_wire(store: LedgerStore) -> list[str]:
    """The store's declaration without the capabilities the protocol cannot serve (WIR-021)."""
    return sorted(item.value for item in store.capabilities if item in CARRIED)


class WireServer:
    """Serves stores made by ``maker`` over one pair of binary streams."""

    def __init__(self, maker: StoreMaker, *, name: str = "convledger-python") -> None:
        self._maker = maker
        self._name = name
        self._stores: dict[int, LedgerStore] = {}
        self._handles = iter(range(1, 2**63))
        self._greeted = False

    def serve(self, requests: BinaryIO, replies: BinaryIO) -> int:
        """Answer frames until the input ends; returns the process exit status."""
        try:
            for reply in self._replies(requests):
                replies.write(_framed(reply))
                replies.flush()
        except FramingLost as error:
            # WIR-004: framing is lost (a cut frame or an over-long length); say why and stop.
            write_frame(replies, {"id": None, "error": _refusal(str(error), "WIR-004")})
            return 2
        except BrokenPipeError:
            return 0
        finally:
            self._close_all()
        return 0

    def answer_frames(self, data: bytes) -> list[dict[str, Any]]:
        """The replies to the complete frames in ``data``, as :meth:`serve` writes them.

        For in-process checks of the protocol; the stores stay open between calls.
        """
        return list(self._replies(io.BytesIO(data)))

    def _replies(self, requests: BinaryIO) -> Iterator[dict[str, Any]]:
        while True:
            try:
                request = read_frame(requests)
            except EndOfStream:
                return
            except FramingLost:
                raise
            except FrameError as error:
                yield {"id": None, "error": _refusal(str(error), "WIR-004")}
                continue
            yield self.answer(request)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one decoded request frame (WIR-005 .. WIR-008)."""
        ident = request.get("id")
        op = request.get("op")
        args = request.get("args", {})
        if not _is_id(ident) or not isinstance(op, str) or not isinstance(args, dict):
            return {
                "id": ident if _is_id(ident) else None,
                "error": _refusal("a request is {id: uint, op: text, args?: map}", "WIR-004"),
            }
        try:
            value = self._dispatch(op, args)
        except LedgerError as error:
            return {"id": ident, "error": values.error_out(error)}
        except Exception as error:  # a bug of the store: never a refusal (WIR-008)
            return {"id": ident, "error": {"kind": values.INTERNAL, "message": repr(error)}}
        return {"id": ident, "ok": value}

    def _dispatch(self, op: str, args: dict[str, Any]) -> object:
        if op == "hello":
            return self._hello(args)
        if not self._greeted:
            raise InvalidInputError("the first request must be hello", requirement="WIR-006")
        if op == "newStore":
            return self._register(self._maker())
        store = self._store(args)
        if op == "reopen":
            reopened = store.reopen()
            self._stores.pop(args["store"], None)
            return self._register(reopened)
        if op == "close":
            self._stores.pop(args["store"]).close()
            return None
        if op == "capabilities":
            return declared_over_wire(store)
        entry = OPERATIONS.get(op)
        if entry is None:
            raise NotSupportedError(
                f"the protocol carries no request {op!r}", requirement="WIR-007", capability=""
            )
        return entry.handler(store, args)

    def _hello(self, args: dict[str, Any]) -> object:
        offered = args.get("protocol")
        if offered != PROTOCOL_VERSION:
            raise NotSupportedError(
                f"protocol version {offered!r} is not {PROTOCOL_VERSION}",
                requirement="WIR-006",
                capability="",
            )
        self._greeted = True
        probe = self._maker()
        try:
            declared = declared_over_wire(probe)
        finally:
            probe.close()
        return {
            "protocol": PROTOCOL_VERSION,
            "spec": convledger.SPEC_VERSION,
            "server": self._name,
            "capabilities": declared,
            "operations": sorted(OPERATIONS),
        }

    def _register(self, store: LedgerStore) -> dict[str, Any]:
        handle = next(self._handles)
        self._stores[handle] = store
        return {"store": handle, "capabilities": declared_over_wire(store)}

    def _store(self, args: dict[str, Any]) -> LedgerStore:
        handle = args.get("store")
        if not _is_id(handle) or handle not in self._stores:
            raise InvalidInputError(f"no open store has handle {handle!r}", requirement="WIR-020")
        return self._stores[handle]

    def _close_all(self) -> None:
        for store in self._stores.values():
            try:
                store.close()
            except Exception as error:  # closing on exit: report, never mask the exit
                print(f"serve-wire: closing a store failed: {error!r}", file=sys.stderr)
        self._stores.clear()


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def _refusal(message: str, requirement: str) -> dict[str, Any]:
    return {"kind": "invalid_input", "message": message, "requirement": requirement}


def _framed(reply: dict[str, Any]) -> bytes:
    """The reply's frame; a result that cannot be encoded is an internal failure (WIR-008)."""
    try:
        return encode_frame(reply)
    except Exception as error:
        failure = {"kind": values.INTERNAL, "message": f"unencodable result: {error!r}"}
        return encode_frame({"id": reply.get("id"), "error": failure})
