"""Serving a store over the wire protocol (chapter ``wire.md``).

Theory of operation
-------------------
:class:`WireServer` reads request frames from a binary stream and writes one
reply frame per request, in order (WIR-005). It holds any number of stores,
each under a handle that ``newStore`` (and ``reopen``) returns (WIR-020), so a
conformance run pays one process start and then one round trip per fresh
store. The request table (:data:`~convledger.wire.requests.OPERATIONS`, one
handler per store operation, derived from the capability table) is in
:mod:`convledger.wire.requests`; capabilities whose operations the protocol
does not carry are removed from every declaration the server sends
(WIR-021), so it never claims what it cannot serve.

Two operations take a callback that lives in the client (``getSpill`` and
``search``, ``authorize``). A request carrying ``authorize: true`` reaches the
store with a stand-in callable that writes a callback frame and reads the
client's callback reply from the same streams before the request's reply is
written (WIR-030 .. WIR-033); only a reply whose ``ok`` is exactly true grants.
A projection definition travels with its fold by name and is rebuilt here with
the named fold (:func:`convledger.wire.requests.resolve_fold`, WIR-018).

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

import convledger
from convledger import limits
from convledger.errors import InvalidInputError, LedgerError, NotSupportedError
from convledger.interface import unchecked
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
from convledger.wire.requests import CARRIED as CARRIED
from convledger.wire.requests import OPERATIONS as OPERATIONS
from convledger.wire.requests import SERVER_REQUESTS as SERVER_REQUESTS
from convledger.wire.requests import declared_over_wire, member

PROTOCOL_VERSION: Final = 1
"""WIR-006: the protocol version this module speaks."""

StoreMaker = Callable[[], LedgerStore]
LocationOpener = Callable[[str], LedgerStore]
"""Opens (or creates empty) the persistent store kept at a location (WIR-040)."""
Send = Callable[[dict[str, Any]], None]


class CallbackFailed(Exception):
    """A reverse call that did not come back with a grant: the store's callback raised (WIR-032)."""


class WireServer:
    """Serves stores made by ``maker`` over one pair of binary streams."""

    def __init__(
        self,
        maker: StoreMaker,
        *,
        name: str = "convledger-python",
        opener: LocationOpener | None = None,
    ) -> None:
        self._maker = maker
        self._opener = opener
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
                request = self._read(requests)
            except EndOfStream:
                return
            except FramingLost:
                raise
            except FrameError as error:
                # LIM-012: not CBOR, text that is not UTF-8, too deep, not a map: invalid_input,
                # and the session goes on; only lost framing (FramingLost) ends it
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
        ident = request.get("id")  # WIR-045: members besides id, op and args are ignored
        op = request.get("op")
        args = request.get("args", {})
        if not _is_id(ident) or not isinstance(op, str) or not isinstance(args, dict):
            return {
                "id": ident if _is_id(ident) else None,
                "error": _refusal("a request is {id: uint, op: text, args?: map}", "WIR-004"),
            }
        if member(args, "authorize") is True:
            args = {**args, "authorize": callback}
        try:  # WIR-042: the store's call has returned (and committed) before the reply is sent
            value = self._dispatch(op, args)
        except LedgerError as error:
            return {"id": ident, "error": values.error_out(error)}
        except Exception as error:  # a bug of the store: never a refusal (WIR-008)
            return {"id": ident, "error": {"kind": values.INTERNAL, "message": _described(error)}}
        return {"id": ident, "ok": value}

    def _reverse_caller(self, requests: BinaryIO, send: Send) -> Callable[[object], bool]:
        """The stand-in for the client's callback of one request (WIR-030 .. WIR-034)."""
        counter = self._callback_numbers()

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
                answer = self._read(requests)
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

    def _read(self, requests: BinaryIO) -> dict[str, Any]:
        """The next frame's map (WIR-001 .. WIR-004, WIR-047, WIR-048)."""
        return read_frame(requests)

    def _callback_numbers(self) -> Iterator[int]:
        """WIR-043: the ids of one request's callback frames, 1, 2, 3, ..."""
        return iter(range(1, 2**63))

    def _dispatch(self, op: str, args: dict[str, Any]) -> object:
        if op == "hello":
            return self._hello(args)
        if not self._greeted:
            raise InvalidInputError("the first request must be hello", requirement="WIR-006")
        if op == "newStore":
            return self._register(self._maker())
        if op == "openStore":
            return self._register(self._open_location(args))
        store = self._store(args)
        if op == "reopen":
            reopened = unchecked(store).reopen()
            self._stores.pop(member(args, "store"), None)
            return self._register(reopened)
        if op == "close":
            self._stores.pop(member(args, "store")).close()
            return None
        if op == "capabilities":
            return declared_over_wire(store)
        entry = OPERATIONS.get(op)
        if entry is None:
            raise NotSupportedError(
                f"the protocol carries no request {op!r}", requirement="WIR-007", capability=""
            )
        # The store refuses an operation it does not declare itself (CAP-002). WIR-026: the
        # handlers read the members their row names, null as null, and ignore any other.
        return entry.handler(unchecked(store), args)

    def _hello(self, args: dict[str, Any]) -> object:
        offered = member(args, "protocol")
        if type(offered) is not int:  # WIR-046: 1.0, true, text, null or no protocol at all
            raise InvalidInputError(
                f"hello's protocol is an integer, not {limits.shown(offered)}",
                requirement="WIR-046",
                field="protocol",
            )
        if offered != PROTOCOL_VERSION:
            raise NotSupportedError(  # WIR-049: never the full decimal form of a bignum
                f"protocol version {limits.shown(offered)} is not {PROTOCOL_VERSION}",
                requirement="WIR-006",
                capability="",
            )
        self._greeted = True
        probe = self._maker()
        try:
            declared = declared_over_wire(probe)
            raised = dict(getattr(probe, "declared_limits", {}))
        finally:
            probe.close()
        answer: dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            "spec": convledger.SPEC_VERSION,  # WIR-022: the registry is this version's kinds.json
            "server": self._name,
            "capabilities": declared,
            "operations": sorted(OPERATIONS) + (["openStore"] if self._opener else []),
        }
        if raised:  # LIM-010: a store that raises a limit says so in hello
            answer["limits"] = raised
        return answer

    def _open_location(self, args: dict[str, Any]) -> LedgerStore:
        """WIR-040: the store kept at ``location``; ``not_supported`` without a persistent one."""
        if self._opener is None:
            raise NotSupportedError(
                "this server keeps no persistent store", requirement="WIR-040", capability=""
            )
        location = member(args, "location")
        if not isinstance(location, str) or not location:
            raise InvalidInputError("openStore needs a location (text)", requirement="WIR-040")
        return self._opener(location)

    def _register(self, store: LedgerStore) -> dict[str, Any]:
        handle = next(self._handles)
        self._stores[handle] = store
        return {"store": handle, "capabilities": declared_over_wire(store)}

    def _store(self, args: dict[str, Any]) -> LedgerStore:
        handle = member(args, "store")
        if not _is_id(handle) or handle not in self._stores:
            raise InvalidInputError(  # WIR-049: a bignum handle is shown by its size
                f"no open store has handle {limits.shown(handle)}", requirement="WIR-020"
            )
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


def _described(error: Exception) -> str:
    """An internal failure's text; a text that cannot be made (WIR-049) is replaced, not raised."""
    try:
        return repr(error)
    except Exception:
        return f"{type(error).__name__} (its text could not be formed)"
