"""Serving a store over the wire protocol (chapter ``wire.md``).

Theory of operation
-------------------
:class:`WireServer` reads request frames from a binary stream and writes one
reply frame per request, in order (WIR-005). It holds any number of stores,
each under a handle that ``newStore`` (and ``reopen``) returns (WIR-020), so a
conformance run pays one process start and then one round trip per fresh
store. :data:`OPERATIONS` is the operation table: one entry per request type,
naming the capability it belongs to and the handler that decodes its
arguments, calls the store and encodes the result, derived from the one
capability table (:data:`convledger.capabilities.OPERATIONS`): an operation
the table marks as carried must have a handler here. Capabilities whose
operations the protocol does not carry are removed from every declaration the
server sends (WIR-021), so it never claims what it cannot serve.

Two operations take a callback that lives in the client (``getSpill`` and
``search``, ``authorize``). A request carrying ``authorize: true`` reaches the
store with a stand-in callable that writes a callback frame and reads the
client's callback reply from the same streams before the request's reply is
written (WIR-030 .. WIR-033); only a reply whose ``ok`` is exactly true grants.
A projection definition travels with its fold by name and is rebuilt here with
the named fold (:func:`resolve_fold`, WIR-018).

Arguments are decoded without validation (:mod:`convledger.wire.values`): the
store refuses ill-typed ones exactly as it does in process. A refusal becomes
an ``error`` reply with its normative kind (WIR-008); any other exception of
the store becomes kind ``internal``, which no client takes for a refusal.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, Final

import attrs

import convledger
from convledger.capabilities import OPERATIONS as CAPABILITY_OPERATIONS
from convledger.capabilities import Capability
from convledger.errors import InvalidInputError, LedgerError, NotSupportedError
from convledger.interface import EveryOperation, unchecked
from convledger.projections.named import resolve
from convledger.store_interface import LedgerStore
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
Handler = Callable[[EveryOperation, dict[str, Any]], object]


@attrs.frozen
class Entry:
    """One request type of the operation table."""

    capability: Capability
    handler: Handler


def _kwargs(args: dict[str, Any], *names: tuple[str, str]) -> dict[str, Any]:
    """The keyword arguments of the wire members present in ``args`` (absent: the default)."""
    return {python: args[wire] for wire, python in names if wire in args}


def _append(store: EveryOperation, args: dict[str, Any]) -> object:
    placed = store.append(
        _member(args, "conversationId"),
        values.drafts_in(_member(args, "drafts")),  # type: ignore[arg-type]
        **_kwargs(args, ("expectedHead", "expected_head")),
    )
    return [values.envelope_out(envelope) for envelope in placed]


def _read(store: EveryOperation, args: dict[str, Any]) -> object:
    page = store.read(
        _member(args, "conversationId"),
        **_kwargs(args, ("fromSeq", "from_seq"), ("toSeq", "to_seq"), ("limit", "limit")),
    )
    return values.page_out(page)


def _member(args: dict[str, Any], name: str) -> Any:
    """A request member as it came, unchecked: the store refuses an ill-typed one."""
    return args.get(name)


def _conversation(args: dict[str, Any]) -> Any:
    return _member(args, "conversationId")


def _transition(store: EveryOperation, args: dict[str, Any]) -> object:
    outcome = store.transition(
        _conversation(args),
        values.transition_in(_member(args, "transition")),  # type: ignore[arg-type]
        event_id=_member(args, "eventId"),
        occurred_at=_member(args, "occurredAt"),
    )
    return values.outcome_out(outcome)


def _scan(store: EveryOperation, args: dict[str, Any]) -> object:
    kwargs = _kwargs(args, ("limit", "limit"))
    if "after" in args:
        kwargs["after"] = values.cursor_in(args["after"])
    return values.recovery_page_out(store.scan_recoverable(**kwargs))


def _authorize(args: dict[str, Any]) -> Any:
    """WIR-030: the callback the server put in place of ``true``, or the value as it came."""
    return _member(args, "authorize")


def _put_spill(store: EveryOperation, args: dict[str, Any]) -> object:
    metadata = store.put_spill(
        _conversation(args),
        _member(args, "data"),
        **_kwargs(args, ("mediaType", "media_type"), ("operation", "operation"),
                  ("reference", "reference"), ("eventId", "event_id"),
                  ("occurredAt", "occurred_at")),
    )
    return values.metadata_out(metadata)


def _get_spill(store: EveryOperation, args: dict[str, Any]) -> object:
    return store.get_spill(
        _conversation(args), _member(args, "reference"), authorize=_authorize(args)
    )


def _delete_spill(store: EveryOperation, args: dict[str, Any]) -> object:
    envelope = store.delete_spill(
        _conversation(args),
        _member(args, "reference"),
        **_kwargs(args, ("reason", "reason"), ("eventId", "event_id"),
                  ("occurredAt", "occurred_at")),
    )
    return values.envelope_out(envelope)


def _search(store: EveryOperation, args: dict[str, Any]) -> object:
    kwargs = _kwargs(args, ("scope", "scope"), ("limit", "limit"))
    hits = store.search(
        _member(args, "requester"), _member(args, "query"), authorize=_authorize(args), **kwargs
    )
    return [values.hit_out(hit) for hit in hits]


def resolve_fold(name: object, version: object) -> object:
    """WIR-018: the fold a definition names, from the table of named folds, or None."""
    return resolve(name, version)


def _definitions(args: dict[str, Any]) -> dict[str, Any]:
    """``projections``, when present: each definition resolved (WIR-018)."""
    if "projections" not in args:
        return {}
    given = args["projections"]
    if not isinstance(given, list):
        return {"projections": given}
    return {"projections": [values.definition_in(item, resolve_fold) for item in given]}


def _catch_up(store: EveryOperation, args: dict[str, Any]) -> object:
    checkpoint = store.catch_up(
        _conversation(args),
        values.definition_in(_member(args, "definition"), resolve_fold),  # type: ignore[arg-type]
        **_kwargs(args, ("maxEvents", "max_events")),
    )
    return values.checkpoint_out(checkpoint)


def _import_conversation(store: EveryOperation, args: dict[str, Any]) -> object:
    # WIR-014: the archive as it came; a store refuses anything but bytes (ARC-003).
    report = store.import_conversation(_member(args, "archive"), **_definitions(args))
    return values.import_report_out(report)


def _import_bundle(store: EveryOperation, args: dict[str, Any]) -> object:
    report = store.import_bundle(_member(args, "bundle"), **_definitions(args))
    return values.import_report_out(report)


HANDLERS: Final[dict[str, Handler]] = {
    "append": _append,
    "read": _read,
    "head": lambda s, a: s.head(_conversation(a)),
    "exportConversation": lambda s, a: s.export_conversation(_conversation(a)),
    "importConversation": _import_conversation,
    "transition": _transition,
    "loadRun": lambda s, a: values.run_out(s.load_run(_conversation(a), _member(a, "runId"))),
    "listActiveRuns": lambda s, a: [
        values.run_out(run) for run in s.list_active_runs(_conversation(a))
    ],
    "loadSnapshot": lambda s, a: values.snapshot_out(s.load_snapshot(_conversation(a))),
    "scanRecoverable": _scan,
    "purge": lambda s, a: s.purge(_conversation(a)).value,
    "putSpill": _put_spill,
    "getSpill": _get_spill,
    "deleteSpill": _delete_spill,
    "exportBundle": lambda s, a: s.export_bundle(_conversation(a)),
    "importBundle": _import_bundle,
    "search": _search,
    "catchUp": _catch_up,
    "loadCheckpoint": lambda s, a: values.checkpoint_out(
        s.load_checkpoint(_conversation(a), _member(a, "name"))
    ),
    "projectionStatus": lambda s, a: values.status_out(
        s.projection_status(_conversation(a), _member(a, "name"))
    ),
}
"""How each request type decodes its arguments, calls the store and encodes the result."""

SERVER_REQUESTS: Final = frozenset({"hello", "newStore", "reopen", "close", "capabilities"})
"""The requests the server answers itself; ``reopen`` is capability ``persistence``'s."""


def _operation_table() -> dict[str, Entry]:
    """WIR-013: the capability table's operations the protocol carries, each with its handler."""
    table = {
        operation.name: Entry(capability, HANDLERS[operation.name])
        for capability, operations in CAPABILITY_OPERATIONS.items()
        for operation in operations
        if operation.wire and operation.name not in SERVER_REQUESTS
    }
    if set(table) != set(HANDLERS):
        raise AssertionError(f"handlers {sorted(set(HANDLERS) ^ set(table))} are not in the table")
    return table


OPERATIONS: Final[dict[str, Entry]] = _operation_table()
"""WIR-013, WIR-015 .. WIR-018: the store operations the protocol carries, by request type.

Derived from :data:`convledger.capabilities.OPERATIONS`, the one capability
table: every operation marked ``wire`` has a handler here, and
``newStore``, ``reopen``, ``close``, ``capabilities`` and ``hello`` are
handled by the server itself.
"""

CARRIED: Final = frozenset(
    capability
    for capability, operations in CAPABILITY_OPERATIONS.items()
    if operations and all(operation.wire for operation in operations)
)
"""WIR-021: the capabilities whose every operation the protocol carries."""


def declared_over_wire(store: LedgerStore) -> list[str]:
    """The store's declaration without the capabilities the protocol cannot serve (WIR-021)."""
    return sorted(item.value for item in store.capabilities if item in CARRIED)


Send = Callable[[dict[str, Any]], None]


class CallbackFailed(Exception):
    """A reverse call that did not come back with a grant: the store's callback raised (WIR-032)."""


class WireServer:
    """Serves stores made by ``maker`` over one pair of binary streams."""

    def __init__(self, maker: StoreMaker, *, name: str = "convledger-python") -> None:
        self._maker = maker
        self._name = name
        self._stores: dict[int, LedgerStore] = {}
        self._handles = iter(range(1, 2**63))
        self._greeted = False
        self._stray: dict[str, Any] | None = None
        self._lost: FramingLost | None = None

    def serve(self, requests: BinaryIO, replies: BinaryIO) -> int:
        """Answer frames until the input ends; returns the process exit status."""

        def send(message: dict[str, Any]) -> None:
            replies.write(_framed(message))
            replies.flush()

        try:
            self._loop(requests, send)
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
        """The frames :meth:`serve` writes for the complete frames in ``data``, callbacks included.

        For in-process checks of the protocol; the stores stay open between calls.
        """
        sent: list[dict[str, Any]] = []
        self._loop(io.BytesIO(data), sent.append)
        return sent

    def _loop(self, requests: BinaryIO, send: Send) -> None:
        while True:
            try:
                request = read_frame(requests)
            except EndOfStream:
                return
            except FramingLost:
                raise
            except FrameError as error:
                send({"id": None, "error": _refusal(str(error), "WIR-004")})
                continue
            send(self._answer(request, self._reverse_caller(requests, send)))
            if self._stray is not None:
                stray, self._stray = self._stray, None
                send(stray)
            if self._lost is not None:
                lost, self._lost = self._lost, None
                raise lost

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one decoded request frame, with no channel for callbacks (WIR-005)."""
        return self._answer(request, _no_channel)

    def _answer(
        self, request: dict[str, Any], callback: Callable[[object], bool]
    ) -> dict[str, Any]:
        """The reply to one decoded request frame (WIR-005 .. WIR-008, WIR-030)."""
        ident = request.get("id")
        op = request.get("op")
        args = request.get("args", {})
        if not _is_id(ident) or not isinstance(op, str) or not isinstance(args, dict):
            return {
                "id": ident if _is_id(ident) else None,
                "error": _refusal("a request is {id: uint, op: text, args?: map}", "WIR-004"),
            }
        if _member(args, "authorize") is True:
            args = {**args, "authorize": callback}
        try:
            value = self._dispatch(op, args)
        except LedgerError as error:
            return {"id": ident, "error": values.error_out(error)}
        except Exception as error:  # a bug of the store: never a refusal (WIR-008)
            return {"id": ident, "error": {"kind": values.INTERNAL, "message": repr(error)}}
        return {"id": ident, "ok": value}

    def _reverse_caller(self, requests: BinaryIO, send: Send) -> Callable[[object], bool]:
        """The stand-in for the client's callback of one request (WIR-030 .. WIR-034)."""
        counter = iter(range(1, 2**63))

        def authorize(value: object) -> bool:
            if self._stray is not None or self._lost is not None:
                raise CallbackFailed("the callback channel of this request is gone")
            ident = next(counter)
            try:
                argument = values.value_out(value)
            except values.Unencodable as error:
                raise CallbackFailed(f"an argument without a CBOR image: {error}") from None
            send({"callback": ident, "kind": "authorize", "args": {"value": argument}})
            try:
                answer = read_frame(requests)
            except EndOfStream:
                raise CallbackFailed("the input ended while a callback was pending") from None
            except FramingLost as error:
                self._lost = error
                raise CallbackFailed(f"{error}") from None
            except FrameError as error:
                self._stray = {"id": None, "error": _refusal(str(error), "WIR-004")}
                raise CallbackFailed(f"{error}") from None
            if (
                answer.get("callbackReply") != ident
                or set(answer) - {"callbackReply", "ok", "error"}
                or ("ok" in answer) == ("error" in answer)
            ):
                stray_id = answer.get("id")
                self._stray = {
                    "id": stray_id if _is_id(stray_id) else None,
                    "error": _refusal(
                        f"a frame that is not the reply to callback {ident} arrived while it "
                        "was pending",
                        "WIR-033",
                    ),
                }
                raise CallbackFailed("the client did not answer the callback")
            if "error" in answer:
                raise CallbackFailed(f"the client's callback failed: {answer['error']!r}")
            return answer["ok"] is True

        return authorize

    def _dispatch(self, op: str, args: dict[str, Any]) -> object:
        if op == "hello":
            return self._hello(args)
        if not self._greeted:
            raise InvalidInputError("the first request must be hello", requirement="WIR-006")
        if op == "newStore":
            return self._register(self._maker())
        store = self._store(args)
        if op == "reopen":
            reopened = unchecked(store).reopen()
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
        # The store refuses an operation it does not declare itself (CAP-002).
        return entry.handler(unchecked(store), args)

    def _hello(self, args: dict[str, Any]) -> object:
        offered = _member(args, "protocol")
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
            "spec": convledger.SPEC_VERSION,  # WIR-022: the registry is this version's kinds.json
            "server": self._name,
            "capabilities": declared,
            "operations": sorted(OPERATIONS),
        }

    def _register(self, store: LedgerStore) -> dict[str, Any]:
        handle = next(self._handles)
        self._stores[handle] = store
        return {"store": handle, "capabilities": declared_over_wire(store)}

    def _store(self, args: dict[str, Any]) -> LedgerStore:
        handle = _member(args, "store")
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


def _no_channel(value: object) -> bool:
    """The callback of a request answered without a channel: it always fails (WIR-032)."""
    raise CallbackFailed("no channel for callbacks")


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
