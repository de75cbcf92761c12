"""The wire gallery: broken wire servers making the choice chapter WIR refused (issues 33, 36).

Each class is the reference :class:`~convledger.wire.server.WireServer` with
exactly ONE bug, the other answer to a question the spec left open until it
was pinned (WIR-004's reply id, WIR-043 .. WIR-049). A test serves each as a
real subprocess (:func:`command`) and runs the check in its record over the
wire; the report must fail the id it is tagged with.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import cbor2

from convledger.errors import InvalidInputError
from convledger.memory import MemoryStore
from convledger.store_interface import LedgerStore
from convledger.wire import frames
from convledger.wire.frames import FrameError, read_exactly, read_length
from convledger.wire.server import WireServer

SIX = frozenset({"eventId", "kind", "occurredAt", "payload", "schemaVersion", "ignorable"})


class TagFrameKeepsId(WireServer):
    """WIR-004: answers a frame holding a tag WIR-003 excludes with the frame's own id."""

    def _read(self, requests: BinaryIO) -> dict[str, Any]:
        body = read_exactly(requests, read_length(requests))
        try:
            return frames.decode_body(body)
        except FrameError:
            value = cbor2.loads(body)  # cbor2 reads a date tag; the frame's id is then "known"
            if isinstance(value, dict) and isinstance(value.get("id"), int):
                return {"id": value["id"], "op": None}
            raise


class CallbackIdsRunOn(WireServer):
    """WIR-043: numbers callback frames across the session, not from 1 in each request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shared = iter(range(1, 2**63))

    def _callback_numbers(self) -> Iterator[int]:
        return self._shared


class IgnoresExtraDraftMembers(WireServer):
    """WIR-044: drops the members of a draft map that are not its six, and takes the rest."""

    def _dispatch(self, op: str, args: dict[str, Any]) -> object:
        drafts = args.get("drafts")
        if op == "append" and isinstance(drafts, list):
            args = {**args, "drafts": [
                {k: v for k, v in d.items() if k in SIX} | ({} if "ignorable" in d
                                                           else {"ignorable": False})
                if isinstance(d, dict) else d for d in drafts]}
        return super()._dispatch(op, args)


class RefusesExtraFrameMembers(WireServer):
    """WIR-045: refuses a request frame holding a member besides id, op and args."""

    def _answer(self, request: dict[str, Any], callback: Any) -> dict[str, Any]:
        if set(request) - {"id", "op", "args"} and isinstance(request.get("id"), int):
            return {"id": request["id"], "error": {"kind": "invalid_input",
                                                   "message": "unknown frame member"}}
        return super()._answer(request, callback)


class AcceptsFloatProtocol(WireServer):
    """WIR-046: takes hello's protocol 1.0 (a float) for the integer 1."""

    def _hello(self, args: dict[str, Any]) -> object:
        if type(args.get("protocol")) is float and args["protocol"] == 1:
            args = {**args, "protocol": 1}
        return super()._hello(args)


class LastKeyWins(WireServer):
    """WIR-047: reads a map holding a key twice, the last value winning (cbor2's default)."""

    def _read(self, requests: BinaryIO) -> dict[str, Any]:
        body = read_exactly(requests, read_length(requests))
        try:
            return frames.decode_body(body)
        except FrameError as error:
            if "twice" not in str(error):
                raise
            value: dict[str, Any] = cbor2.loads(body)
            return value


class Nests512(WireServer):
    """WIR-048: reads frames nested up to 512 levels (the cap its code once documented)."""

    def _read(self, requests: BinaryIO) -> dict[str, Any]:
        saved, frames.MAX_NESTING = frames.MAX_NESTING, 512
        try:
            return super()._read(requests)
        finally:
            frames.MAX_NESTING = saved


class ReprHandles(WireServer):
    """WIR-049: writes an unknown store handle into its message with repr."""

    def _store(self, args: dict[str, Any]) -> LedgerStore:
        handle = args.get("store")
        if handle not in self._stores:
            raise InvalidInputError(f"no open store has handle {handle!r}",
                                    requirement="WIR-020")
        return super()._store(args)


@attrs.frozen
class BrokenServer:
    """One broken wire server: its class, the id it breaks and the check that kills it."""

    cls: type[WireServer]
    catches: str
    check: str

    @property
    def name(self) -> str:
        """The class name (test ids)."""
        return self.cls.__name__


BROKEN: tuple[BrokenServer, ...] = (
    BrokenServer(TagFrameKeepsId, "WIR-004", "wire_malformed_frames"),
    BrokenServer(CallbackIdsRunOn, "WIR-043", "wire_callback_numbering"),
    BrokenServer(IgnoresExtraDraftMembers, "WIR-044", "wire_draft_members"),
    BrokenServer(RefusesExtraFrameMembers, "WIR-045", "wire_request_members"),
    BrokenServer(AcceptsFloatProtocol, "WIR-046", "wire_hello_protocol"),
    BrokenServer(LastKeyWins, "WIR-047", "wire_repeated_map_keys"),
    BrokenServer(Nests512, "WIR-048", "wire_nesting_cap"),
    BrokenServer(ReprHandles, "WIR-049", "wire_huge_integers"),
)

TESTS = Path(__file__).resolve().parents[1]


def command(name: str) -> list[str]:
    """The argv serving broken server ``name`` over standard input and output."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(TESTS)!r}); "
            f"from galleries.wire import serve; serve({name!r})"]


def serve(name: str) -> None:
    """Serve memory stores with broken server ``name`` until the input ends."""
    cls = next(item.cls for item in BROKEN if item.name == name)
    sys.exit(cls(MemoryStore).serve(sys.stdin.buffer, sys.stdout.buffer))
