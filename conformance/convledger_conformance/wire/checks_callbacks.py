"""Checks of chapter WIR: requests of optional capabilities and callback frames.

The spill, search and projection requests (WIR-016 .. WIR-018, PRJ-004) and
the callback frames a server sends while a request is pending, answered by
the caller's ``authorize`` (WIR-030 .. WIR-034), on the server's side and on
this suite's client (:class:`~convledger_conformance.wire.connection.WireConnection`
against an echoing server in a subprocess). Frames go through
:mod:`convledger_conformance.wire.channel`.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from typing import Any

from convledger.projections.named import counting
from convledger.store import Capability
from convledger.wire.frames import encode_frame
from convledger.wire.server import PROTOCOL_VERSION, WireServer
from convledger.wire.values import INTERNAL
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    fail,
    refused,
    untyped,
)
from convledger_conformance.wire.channel import (
    _IDS,
    Exchange,
    _ask,
    _draft_map,
    _new_store,
    _refusal,
    _request,
    _with_channel,
)
from convledger_conformance.wire.store import WireStore

_STAMP = "2024-05-01T12:00:00Z"
_GRANT = {"user": "u-1"}


def _frames(data: bytes, *more: dict[str, Any]) -> bytes:
    """``data`` followed by the frames ``more`` (callback replies written ahead of time)."""
    return data + b"".join(encode_frame(item) for item in more)


def _callback_frame(frame: object, value: object, ids: tuple[str, ...], what: str) -> int:
    """The id of a well-formed callback frame asking about ``value`` (WIR-030, WIR-031)."""
    if not isinstance(frame, dict) or set(frame) != {"callback", "kind", "args"} or (
        frame.get("kind") != "authorize" or frame.get("args") != {"value": value}
        or not isinstance(frame.get("callback"), int)
    ):
        fail(ids, f"{what}: expected a callback frame about {value!r}, got {frame!r}")
    ident: int = frame["callback"]
    return ident


def _get_spill(handle: int, ident: int, **extra: Any) -> bytes:
    return _request(ident, "getSpill", store=handle, conversationId="c", reference="r", **extra)


@check("WIR-016", "WIR-030", "WIR-031", "WIR-032", "WIR-033", capability=Capability.SPILLS)
def check_wire_spill_requests(ctx: CheckContext) -> None:
    """WIR-016, WIR-030 .. WIR-033: spill bytes travel as bytes; get_spill calls back."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        data = b"\x00\xffspill"
        put = _ask(exchange, "putSpill", "WIR-016", store=handle, conversationId="c", data=data,
                   mediaType="application/octet-stream",
                   operation={"operationId": "op", "authorization": _GRANT}, reference="r",
                   eventId="w-s1", occurredAt=_STAMP).get("ok")
        if not isinstance(put, dict) or put.get("bytes") != len(data) or put.get(
            "createdSeq"
        ) != 1:
            fail("WIR-016", f"putSpill answered {put!r}")
        text = _ask(exchange, "putSpill", "WIR-016", store=handle, conversationId="c",
                    data="text", mediaType="text/plain",
                    operation={"operationId": "op", "authorization": _GRANT}, reference="t",
                    eventId="w-s2", occurredAt=_STAMP)
        _refusal(text, "invalid_input", "WIR-016", "putSpill of text data")
        ids = ("WIR-030", "WIR-031")
        for answer, expected, requirement in (
            ({"ok": True}, data, "WIR-032"), ({"ok": False}, None, "WIR-032"),
            ({"ok": 1}, None, "WIR-032"),
            ({"error": {"kind": INTERNAL, "message": "raised"}}, None, "WIR-032"),
        ):
            ident = next(_IDS)
            frames = exchange(_frames(_get_spill(handle, ident, authorize=True),
                                      {"callbackReply": 1, **answer}), 2)
            called = _callback_frame(frames[0], _GRANT, ids, f"getSpill answered {answer!r}")
            if called != 1:
                # The callback's id is the server's choice: answer the one it sent.
                frames = exchange(_frames(_get_spill(handle, ident, authorize=True),
                                          {"callbackReply": called, **answer}), 2)
            reply = frames[1]
            if not isinstance(reply, dict) or reply.get("id") != ident:
                fail(("WIR-031", "WIR-005"), f"after a callback reply: {reply!r}")
            if expected is not None and reply.get("ok") != expected:
                fail(("WIR-016", requirement), f"a granted getSpill answered {reply!r}")
            if expected is None:
                _refusal(reply, "unauthorized", requirement, f"a callback reply {answer!r}")
        for extra, what in (({}, "no authorize"), ({"authorize": False}, "authorize false")):
            ident = next(_IDS)
            (reply,) = exchange(_get_spill(handle, ident, **extra), 1)
            if "callback" in reply:
                fail("WIR-030", f"getSpill with {what} called back: {reply!r}")
            _refusal(reply, "invalid_input", "WIR-030", f"getSpill with {what}")
        ident, stray = next(_IDS), next(_IDS)
        frames = exchange(_frames(_get_spill(handle, ident, authorize=True),
                                  {"id": stray, "op": "head",
                                   "args": {"store": handle, "conversationId": "c"}}), 3)
        _callback_frame(frames[0], _GRANT, ids, "getSpill before a stray request")
        if not isinstance(frames[1], dict) or frames[1].get("id") != ident:
            fail("WIR-033", f"a stray frame during a callback: then {frames[1]!r}")
        _refusal(frames[1], "unauthorized", "WIR-033", "getSpill whose callback met a stray frame")
        if not isinstance(frames[2], dict) or frames[2].get("id") != stray:
            fail("WIR-033", f"the stray request was answered with {frames[2]!r}")
        _refusal(frames[2], "invalid_input", "WIR-033", "a request sent during a callback")
        bundle = _ask(exchange, "exportBundle", "WIR-016", store=handle,
                      conversationId="c").get("ok")
        if not isinstance(bundle, bytes):
            fail("WIR-016", f"exportBundle answered {bundle!r}")
        target, _ = _new_store(exchange)
        imported = _ask(exchange, "importBundle", "WIR-016", store=target, bundle=bundle)
        if imported.get("ok") != {"conversationId": "c", "events": 1, "headSeq": 1}:
            fail("WIR-016", f"importBundle answered {imported!r}")
        again = _ask(exchange, "exportBundle", "WIR-016", store=target, conversationId="c")
        if again.get("ok") != bundle:
            fail("WIR-016", "a bundle changed on its way through importBundle and exportBundle")
        other, _ = _new_store(exchange)
        listed = _ask(exchange, "importBundle", "WIR-016", store=other, bundle=list(bundle))
        _refusal(listed, "invalid_input", "WIR-016", "importBundle of an array")
        deleted = _ask(exchange, "deleteSpill", "WIR-016", store=handle, conversationId="c",
                       reference="r", eventId="w-s3", occurredAt=_STAMP).get("ok")
        if not isinstance(deleted, dict) or deleted.get("kind") != "spill/deleted":
            fail("WIR-016", f"deleteSpill answered {deleted!r}")
        for item in (handle, target, other):
            _ask(exchange, "close", "WIR-016", store=item)

    _with_channel(ctx, body)
    # WIR-033: the reference server, when its input ends during a callback, denies.
    server = WireServer(ctx.factory)
    server.answer_frames(_request(0, "hello", protocol=PROTOCOL_VERSION))
    (created,) = server.answer_frames(_request(1, "newStore"))
    handle = created["ok"]["store"]
    server.answer_frames(_request(2, "putSpill", store=handle, conversationId="c", data=b"x",
                                  mediaType="text/plain", reference="r", eventId="w-e1",
                                  operation={"operationId": "op", "authorization": _GRANT},
                                  occurredAt=_STAMP))
    frames = server.answer_frames(_get_spill(handle, 3, authorize=True))
    if len(frames) != 2 or frames[1].get("id") != 3:
        fail("WIR-033", f"input ending during a callback: {frames!r}")
    _refusal(frames[1], "unauthorized", "WIR-033", "getSpill whose input ended in a callback")
    server.answer_frames(_request(4, "close", store=handle))


@check("WIR-017", "WIR-030", "WIR-031", capability=Capability.SEARCH)
def check_wire_search_requests(ctx: CheckContext) -> None:
    """WIR-017, WIR-030, WIR-031: search hits travel as maps; foreign ones are asked back."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        for cid, event_id in (("me", "w-q1"), ("other", "w-q2")):
            _ask(exchange, "append", "WIR-017", store=handle, conversationId=cid,
                 drafts=[_draft_map(event_id, {"text": "wire needle"})])
        own = _ask(exchange, "search", "WIR-017", store=handle, requester="me", query="needle")
        hits = own.get("ok")
        if not isinstance(hits, list) or [
            (hit.get("conversationId"), hit.get("seq")) for hit in hits if isinstance(hit, dict)
        ] != [("me", 1)] or set(hits[0]) != {"conversationId", "seq", "occurredAt", "snippet"}:
            fail(("WIR-017", "WIR-030"), f"a search without authorize answered {own!r}")
        ident = next(_IDS)
        frames = exchange(_frames(
            _request(ident, "search", store=handle, requester="me", query="needle",
                     authorize=True),
            {"callbackReply": 1, "ok": True},
        ), 2)
        called = _callback_frame(frames[0], "other", ("WIR-030", "WIR-031"), "search")
        if called != 1:
            frames = exchange(_frames(
                _request(ident, "search", store=handle, requester="me", query="needle",
                         authorize=True),
                {"callbackReply": called, "ok": True},
            ), 2)
        reply = frames[1]
        found = reply.get("ok") if isinstance(reply, dict) else None
        if not isinstance(found, list) or [
            (hit.get("conversationId"), hit.get("seq")) for hit in found
        ] != [("me", 1), ("other", 1)]:
            fail(("WIR-017", "WIR-031"), f"an authorized search answered {reply!r}")
        _ask(exchange, "close", "WIR-017", store=handle)

    _with_channel(ctx, body)


_ECHO_SERVER = """
import sys
from convledger.wire.frames import EndOfStream, read_frame, write_frame
inp, out = sys.stdin.buffer, sys.stdout.buffer
declared = {"store": 1, "capabilities": ["ledger"]}
while True:
    try:
        request = read_frame(inp)
    except EndOfStream:
        break
    op, ident = request.get("op"), request.get("id")
    if op == "hello":
        write_frame(out, {"id": ident, "ok": {"protocol": 1, "spec": "echo", "server": "echo",
                                              "capabilities": ["ledger"], "operations": []}})
    elif op in ("newStore", "close"):
        write_frame(out, {"id": ident, "ok": declared if op == "newStore" else None})
    else:
        write_frame(out, {"callback": 7, "kind": "authorize", "args": {"value": "asked"}})
        write_frame(out, {"id": ident, "ok": read_frame(inp)})
"""
"""A server that calls back every request once and answers with the client's callback reply."""

CALLBACK_TIMEOUT = 0.25
"""The client's timeout while a callback runs longer (WIR-033): what the already running echo
server needs before its next frame is a read and a write of a few bytes, well under a
millisecond of CPU, so a quarter of a second leaves a margin for a machine loaded many times
over (the rest of the check uses 30 s)."""
CALLBACK_OVERRUN = 0.1
"""How much longer than :data:`CALLBACK_TIMEOUT` the slow callback takes: longer by any margin
proves the rule, since the client's clock stops only while the callback runs."""


@check("WIR-031", "WIR-032", "WIR-033", "WIR-034")
def check_wire_client_callbacks(ctx: CheckContext) -> None:
    """WIR-031 .. WIR-034: this suite's client answers callbacks exactly, in time, and alone."""
    from convledger_conformance.wire.connection import WireConnection, WireProtocolError

    def raising(_: object) -> object:
        raise PermissionError("no")

    connection = WireConnection([sys.executable, "-c", _ECHO_SERVER], timeout=30.0)
    try:
        asked: list[object] = []

        def recording(value: object) -> bool:
            asked.append(value)
            return True

        for callback, expected in (
            (recording, {"callbackReply": 7, "ok": True}),
            (lambda _: 1, {"callbackReply": 7, "ok": False}),
            (lambda _: "yes", {"callbackReply": 7, "ok": False}),
        ):
            echoed = connection.request("probe", {}, callback=callback)
            if echoed != expected:
                fail(("WIR-031", "WIR-032"), f"the client answered a callback with {echoed!r}")
        if asked != ["asked"]:
            fail("WIR-031", f"the callback was called with {asked!r}")
        echoed = connection.request("probe", {}, callback=raising)
        if set(echoed) != {"callbackReply", "error"} or echoed.get("callbackReply") != 7:
            fail("WIR-032", f"a raising callback was answered with {echoed!r}")

        slept: list[float] = []

        def slow(_: object) -> bool:
            started = time.monotonic()
            time.sleep(CALLBACK_TIMEOUT + CALLBACK_OVERRUN)
            slept.append(time.monotonic() - started)
            return True

        connection.timeout = CALLBACK_TIMEOUT  # shorter than the callback: only the server's
        try:  # time counts
            answered = connection.request("probe", {}, callback=slow)
        finally:
            connection.timeout = 30.0
        if answered != {"callbackReply": 7, "ok": True}:
            fail("WIR-033", f"a callback that took {slept[0] if slept else 0:.2f} s, longer than"
                            f" the client's timeout of {CALLBACK_TIMEOUT} s, was not answered")
        if not slept or slept[0] <= CALLBACK_TIMEOUT:  # the precondition, made sure of
            raise AssertionError(f"the slow callback took {slept} s, not over the timeout")

        def nested(_: object) -> bool:
            connection.request("probe", {})
            return True

        echoed = connection.request("probe", {}, callback=nested)
        if "error" not in echoed:
            fail("WIR-034", f"a callback that called the store was answered with {echoed!r}")
        try:
            connection.request("probe", {})
        except WireProtocolError:
            pass
        else:
            fail("WIR-031", "a callback for a request without one was answered")
    finally:
        connection.close()


def _definition_map(fold: object, *, name: str = "w-count", version: int = 2) -> dict[str, Any]:
    return {
        "name": name, "version": version, "fold": fold, "kinds": None,
        "stateSchema": {"type": "object", "required": ["count", "seqs"]},
        "initialState": {"count": 0, "seqs": []},
    }


@check("WIR-018", "PRJ-004", capability=Capability.PROJECTIONS)
def check_wire_projection_requests(ctx: CheckContext) -> None:
    """WIR-018, PRJ-004: definitions travel with named folds; unknown fold names are refused."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        _ask(exchange, "append", "WIR-018", store=handle, conversationId="c",
             drafts=[_draft_map(f"w-p{n}", n) for n in range(3)])
        counted = _definition_map("conformance.count")
        first = _ask(exchange, "catchUp", "WIR-018", store=handle, conversationId="c",
                     definition=counted, maxEvents=2).get("ok")
        if first != {"name": "w-count", "version": 2, "uptoSeq": 2,
                     "state": {"count": 2, "seqs": [2, 4]}}:
            fail("WIR-018", f"a catchUp of conformance.count answered {first!r}")
        loaded = _ask(exchange, "loadCheckpoint", "WIR-018", store=handle, conversationId="c",
                      name="w-count").get("ok")
        if loaded != first:
            fail("WIR-018", f"loadCheckpoint answered {loaded!r}")
        status = _ask(exchange, "projectionStatus", "WIR-018", store=handle,
                      conversationId="c", name="w-count").get("ok")
        if status != {"uptoSeq": 2, "head": 3, "version": 2}:
            fail("WIR-018", f"projectionStatus answered {status!r}")
        none = _ask(exchange, "projectionStatus", "WIR-018", store=handle,
                    conversationId="c", name="nothing").get("ok")
        if none != {"uptoSeq": 0, "head": 3, "version": None}:
            fail("WIR-018", f"projectionStatus without a checkpoint answered {none!r}")
        for fold in ("no.such.fold", None, 7):
            unknown = _ask(exchange, "catchUp", ("WIR-018", "PRJ-004"), store=handle,
                           conversationId="c", definition=_definition_map(fold, name="w-x"))
            _refusal(unknown, "invalid_input", ("WIR-018", "PRJ-004"), f"a fold named {fold!r}")
            stored = _ask(exchange, "loadCheckpoint", "PRJ-004", store=handle,
                          conversationId="c", name="w-x").get("ok")
            if stored is not None:
                fail("PRJ-004", f"a refused definition with fold {fold!r} stored {stored!r}")
        archive_bytes = _ask(exchange, "exportConversation", "WIR-018", store=handle,
                             conversationId="c").get("ok")
        target, _ = _new_store(exchange)
        bare = _ask(exchange, "importConversation", "WIR-018", store=target,
                    archive=archive_bytes)
        _refusal(bare, "invalid_input", "WIR-018", "an import without the definition")
        imported = _ask(exchange, "importConversation", "WIR-018", store=target,
                        archive=archive_bytes, projections=[counted])
        if imported.get("ok") != {"conversationId": "c", "events": 3, "headSeq": 3}:
            fail("WIR-018", f"an import with the definition answered {imported!r}")
        for item in (handle, target):
            _ask(exchange, "close", "WIR-018", store=item)

    _with_channel(ctx, body)
    store = ctx.factory()
    try:
        if isinstance(store, WireStore):
            unnamed = counting(name="w-unnamed")
            object.__setattr__(unnamed, "fold", lambda state, envelope: state)
            refused(partial(untyped(store).catch_up, "c", unnamed), "invalid_input", "WIR-018",
                    "a definition whose fold has no name")
    finally:
        store.close()
