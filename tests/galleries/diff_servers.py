"""Wire servers that differ from the reference in one protocol behaviour (issue 33).

Each is the reference wire server with one behaviour turned the other way:
what the reference decides, this server does the opposite, so the test holds
whichever way the spec settles the point. Run as a script:
``python tests/galleries/diff_servers.py MODE [ARG ...]``; ``diff`` must find a
disagreement with each (``tests/test_diff.py``).

==================== ================================================================
mode                 behaviour
==================== ================================================================
``wir003-id``        a frame that is readable CBOR but breaks WIR-003 (a tag, a simple
                     value) is answered with the other id: the request's id where the
                     reference answers null, null where it answers the request's id
``callback-ids``     callback frames numbered 1000 above the reference's numbers
``draft-member M``   a draft member outside the six refused (M ``refuse``) or ignored
                     (M ``ignore``)
``request-member M`` request members beyond ``id``, ``op``, ``args`` refused or ignored
``hello A F``        ``hello`` without ``protocol`` answered A, with ``protocol: 1.0``
                     answered F (``ok`` or an error kind)
``format-version``   an archive whose ``formatVersion`` is null, text or a float
                     answered with another kind than the reference gives it
==================== ================================================================
"""

from __future__ import annotations

import io
import json
import struct
import sys
from typing import Any, BinaryIO

import cbor2

from convledger.memory import MemoryStore
from convledger.wire.frames import FrameError, decode_body, encode_frame
from convledger.wire.server import WireServer

DRAFT_MEMBERS = frozenset({"eventId", "kind", "occurredAt", "payload", "schemaVersion",
                           "ignorable"})
REQUEST_MEMBERS = frozenset({"id", "op", "args"})
SHIFT = 1000


def other_kind(answer: str) -> str:
    """An answer that is not ``answer``: another error kind."""
    return "not_supported" if answer == "invalid_input" else "invalid_input"


def reference_answer(frames: bytes) -> list[dict[str, Any]]:
    """What a fresh, greeted reference server answers to ``frames`` (a scratch store)."""
    server = WireServer(MemoryStore)
    server.answer_frames(encode_frame({"id": 0, "op": "hello", "args": {"protocol": 1}}))
    return server.answer_frames(encode_frame({"id": 0, "op": "newStore"}) + frames)[1:]


def refusal(ident: object, kind: str) -> dict[str, Any]:
    return {"id": ident, "error": {"kind": kind, "message": "diff gallery server"}}


class Shifted(io.RawIOBase):
    """The client's frames, with each ``callbackReply`` id moved back by :data:`SHIFT`."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if not self._buffer:
            head = self._stream.read(4)
            if len(head) < 4:
                return head
            body = self._stream.read(struct.unpack(">I", head)[0])
            try:
                message = cbor2.loads(body)
            except Exception:
                message = None
            if isinstance(message, dict) and isinstance(message.get("callbackReply"), int):
                body = cbor2.dumps({**message, "callbackReply": message["callbackReply"] - SHIFT},
                                   canonical=True)
            self._buffer = struct.pack(">I", len(body)) + body
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


class DifferentServer(WireServer):
    """The reference server with the behaviour ``mode`` turned the other way."""

    def __init__(self, mode: str, options: list[str]) -> None:
        super().__init__(MemoryStore, name=f"diff-gallery-{mode}")
        self.mode = mode
        self.options = options

    def _loop(self, requests: BinaryIO, send: Any) -> None:
        if self.mode != "wir003-id":
            super()._loop(requests, send)
            return
        while True:
            head = requests.read(4)
            if len(head) < 4:
                return
            body = requests.read(struct.unpack(">I", head)[0])
            frame = head + body
            try:
                request = decode_body(body)
            except FrameError:
                try:
                    loaded = cbor2.loads(body)
                except Exception:
                    loaded = None
                if isinstance(loaded, dict) and "id" in loaded:
                    (expected,) = reference_answer(frame)
                    ident = loaded["id"] if expected.get("id") is None else None
                    send(refusal(ident, "invalid_input"))
                else:
                    super()._loop(io.BytesIO(frame), send)
                continue
            send(self._answer(request, self._reverse_caller(requests, send)))

    def _reverse_caller(self, requests: BinaryIO, send: Any) -> Any:
        if self.mode != "callback-ids":
            return super()._reverse_caller(requests, send)

        def shifted(message: dict[str, Any]) -> None:
            if "callback" in message:
                message = {**message, "callback": message["callback"] + SHIFT}
            send(message)

        return super()._reverse_caller(Shifted(requests), shifted)  # type: ignore[arg-type]

    def _answer(self, request: dict[str, Any], callback: Any) -> dict[str, Any]:
        ident = request.get("id")
        op, args = request.get("op"), request.get("args")
        if self.mode == "request-member" and set(request) - REQUEST_MEMBERS:
            if self.options[0] == "refuse":
                return refusal(ident, "invalid_input")
            request = {key: request[key] for key in REQUEST_MEMBERS if key in request}
        if self.mode == "draft-member" and op == "append" and isinstance(args, dict):
            drafts = args.get("drafts")
            extra = isinstance(drafts, list) and any(
                isinstance(item, dict) and set(item) - DRAFT_MEMBERS for item in drafts)
            if extra and self.options[0] == "refuse":
                return refusal(ident, "invalid_input")
            if extra:
                assert isinstance(drafts, list)
                request = {**request, "args": {**args, "drafts": [
                    {key: value for key, value in item.items() if key in DRAFT_MEMBERS}
                    if isinstance(item, dict) else item for item in drafts]}}
        if self.mode == "hello" and op == "hello" and isinstance(args, dict):
            protocol = args.get("protocol", None)
            answer = (self.options[0] if "protocol" not in args else
                      self.options[1] if isinstance(protocol, float) else None)
            if answer == "ok":
                request = {**request, "args": {**args, "protocol": 1}}
            elif answer is not None:
                return refusal(ident, answer)
        if self.mode == "format-version" and op == "importConversation" and isinstance(
                args, dict) and isinstance(args.get("archive"), bytes):
            try:
                archive = json.loads(args["archive"])
            except ValueError:
                archive = None
            version = archive.get("formatVersion", 0) if isinstance(archive, dict) else 0
            if version is None or isinstance(version, (str, float)):
                scratch = {**request, "args": {**args, "store": 1}}
                (expected,) = reference_answer(encode_frame(scratch))
                kind = expected["error"]["kind"] if "error" in expected else "ok"
                return refusal(ident, other_kind(kind))
        return super()._answer(request, callback)


def main(argv: list[str]) -> int:
    """Serve on standard input and output until the input ends."""
    server = DifferentServer(argv[0], argv[1:])
    return server.serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
