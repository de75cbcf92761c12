"""Checks of chapter WIR for the gaps an outsider found and issue 36's hostile frames.

Each fails the choice the spec refused: a draft map with another member
(WIR-044), a request frame with an extra member (WIR-045), ``hello``'s
``protocol`` typed (WIR-046), repeated map keys (WIR-047), the nesting cap
(WIR-048), integers of 10^5 digits in every argument position (WIR-049) and
callback frames numbered from 1 in each request (WIR-043). Frames go through
:mod:`convledger_conformance.wire.channel`.
"""

from __future__ import annotations

from typing import Any

import cbor2

from convledger.store import Capability
from convledger.wire.server import OPERATIONS, PROTOCOL_VERSION, WireServer
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import fail
from convledger_conformance.wire.channel import (
    Exchange,
    _ask,
    _draft_map,
    _new_store,
    _raw,
    _refusal,
    _request,
    _with_channel,
)

HUGE = 10**100_000 - 1
"""WIR-049: an integer of 10^5 decimal digits (no str() of it is needed to send it)."""

_SERVER_REQUESTS = ("newStore", "reopen", "close", "capabilities", "openStore")


def _huge_frame(ident: int, op: str, args: dict[str, Any]) -> bytes:
    """A request frame whose args hold :data:`HUGE` (cbor2 encodes it as a bignum)."""
    return _raw(
        cbor2.dumps({"id": ident, "op": op, "args": args}, canonical=True))


@check("WIR-044", "WIR-012", "ENV-012")
def check_wire_draft_members(ctx: CheckContext) -> None:
    """WIR-044: a draft map lacking a member or holding another is refused, never trimmed."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        base = _draft_map("w-dm-1", 1)
        odd = {
            "an extra seq": {**base, "seq": 1},
            "an extra conversationId": {**base, "conversationId": "dm"},
            "a misspelt ignorable": {**{k: v for k, v in base.items() if k != "ignorable"},
                                     "ignorabel": True},
            "no ignorable": {k: v for k, v in base.items() if k != "ignorable"},
        }
        for what, element in odd.items():
            reply = _ask(exchange, "append", "WIR-044", store=handle, conversationId="dm",
                         drafts=[element])
            _refusal(reply, "invalid_input", ("WIR-044", "WIR-012"), f"a draft with {what}")
        head = _ask(exchange, "head", "WIR-044", store=handle, conversationId="dm")
        if head.get("ok") != 0:
            fail("WIR-044", f"a refused draft left head {head!r}")
        ok = _ask(exchange, "append", "WIR-044", store=handle, conversationId="dm", drafts=[base])
        if "ok" not in ok:
            fail("WIR-044", f"a draft of exactly six members was refused: {ok!r}")

    _with_channel(ctx, body)


@check("WIR-045", "WIR-004")
def check_wire_request_members(ctx: CheckContext) -> None:
    """WIR-045: a request frame with a member besides id, op and args is answered as without."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        frame = _raw(cbor2.dumps({"id": 4242, "op": "head", "trace": "t-1", "zz": [1],
                                  "args": {"store": handle, "conversationId": "rm"}},
                                 canonical=True))
        (reply,) = exchange(frame, 1)
        if not isinstance(reply, dict) or reply.get("id") != 4242 or reply.get("ok") != 0:
            fail(("WIR-045", "WIR-004"), f"a head request with extra frame members "
                 f"`trace` and `zz` answered {reply!r}, expected {{id: 4242, ok: 0}}")

    _with_channel(ctx, body)


@check("WIR-046", "WIR-006", "WIR-049")
def check_wire_hello_protocol(ctx: CheckContext) -> None:
    """WIR-046: hello's protocol is an integer; 1.0, text, true or none are invalid_input."""

    def body(exchange: Exchange) -> None:
        for what, args in (("no protocol", {}), ("protocol 1.0", {"protocol": 1.0}),
                           ("protocol true", {"protocol": True}),
                           ("protocol \"1\"", {"protocol": "1"}),
                           ("protocol null", {"protocol": None}),
                           ("protocol [1]", {"protocol": [1]})):
            reply = _ask(exchange, "hello", "WIR-046", **args)
            _refusal(reply, "invalid_input", ("WIR-046", "WIR-006"), f"hello with {what}")
        for what, value in (("protocol 2", 2), ("protocol -1", -1), ("protocol 2**64", 2**64),
                            ("a protocol of 10^5 digits", HUGE)):
            (reply,) = exchange(_huge_frame(77, "hello", {"protocol": value}), 1)
            if not isinstance(reply, dict) or reply.get("id") != 77:
                fail(("WIR-046", "WIR-049"), f"hello with {what}: answered {reply!r}")
            _refusal(reply, "not_supported", ("WIR-046", "WIR-049"), f"hello with {what}")
        again = _ask(exchange, "hello", "WIR-046", protocol=PROTOCOL_VERSION)
        if "ok" not in again:
            fail("WIR-046", f"hello with protocol 1 after the refusals answered {again!r}")

    _with_channel(ctx, body)
    fresh = WireServer(ctx.factory)
    replies = fresh.answer_frames(_request(1, "hello", protocol=1.0) + _request(2, "newStore"))
    if [reply.get("error", {}).get("kind") for reply in replies] != ["invalid_input"] * 2:
        fail("WIR-046", f"the reference server greeted hello {{protocol: 1.0}}: {replies!r}")


@check("WIR-047", "WIR-004")
def check_wire_repeated_map_keys(ctx: CheckContext) -> None:
    """WIR-047: a map holding a key twice, at any depth, is a malformed frame (id null)."""

    def entry(key: str, value: bytes) -> bytes:
        return bytes([0x60 + len(key)]) + key.encode() + value

    def frame(*entries: bytes) -> bytes:
        return _raw(bytes([0xA0 + len(entries)]) + b"".join(entries))

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        store_entry = entry("store", cbor2.dumps(handle))
        cases = {
            "id twice": frame(entry("id", b"\x01"), entry("id", b"\x02"), entry("op", b"\x64head"),
                              entry("args", b"\xa2" + store_entry + entry("conversationId",
                                                                          b"\x61c"))),
            "conversationId twice in args": frame(
                entry("id", b"\x03"), entry("op", b"\x64head"),
                entry("args", b"\xa3" + store_entry + entry("conversationId", b"\x61a")
                      + entry("conversationId", b"\x61b"))),
            "a key written twice in two forms": frame(
                entry("id", b"\x04"), entry("op", b"\x64head"),
                entry("args", b"\xa3" + store_entry + entry("conversationId", b"\x61a")
                      + b"\x78\x0econversationId" + b"\x61b")),
        }
        for what, data in cases.items():
            (reply,) = exchange(data, 1)
            if not isinstance(reply, dict):
                fail("WIR-047", f"{what}: answered {reply!r}")
            _refusal(reply, "invalid_input", ("WIR-047", "WIR-004"), f"a frame with {what}")
            if reply.get("id") is not None:
                fail("WIR-047", f"a frame with {what}: the reply's id is {reply.get('id')!r}, "
                     "expected null (a malformed frame's members are not read)")
        _new_store(exchange)  # still serving

    _with_channel(ctx, body)


def _nested(levels: int) -> Any:
    """A JSON value whose deepest item is ``levels`` levels down (a scalar is 1)."""
    value: Any = 0
    for _ in range(levels - 1):
        value = [value]
    return value


@check("WIR-048", "WIR-004", "LIM-005")
def check_wire_nesting_cap(ctx: CheckContext) -> None:
    """WIR-048: a frame 300 levels deep reaches the store; 301 levels is malformed (id null)."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        # frame map 1, args 2, drafts 3, draft 4, payload 5, its value 6: the rest is the value's
        for levels, expected_id in ((300, 5300), (301, None)):
            draft = _draft_map("w-deep", None)
            draft["payload"] = {"name": "slot", "version": 1, "actor": "wire",
                                "value": _nested(levels - 5)}
            data = _request(5000 + levels, "append", store=handle, conversationId="nest",
                            drafts=[draft])
            (reply,) = exchange(data, 1)
            if not isinstance(reply, dict):
                fail("WIR-048", f"a frame {levels} levels deep: answered {reply!r}")
            _refusal(reply, "invalid_input", ("WIR-048", "LIM-005"),
                     f"an append {levels} levels deep")
            if reply.get("id") != expected_id:
                fail("WIR-048", f"a frame {levels} levels deep: the reply's id is "
                     f"{reply.get('id')!r}, expected {expected_id!r} (the store refuses the "
                     "payload at 300 levels; a deeper frame is malformed)")
        _new_store(exchange)  # still serving

    _with_channel(ctx, body)


@check("WIR-049", "WIR-008", "WIR-020",
       optional=tuple(item for item in Capability if item is not Capability.LEDGER))
def check_wire_huge_integers(ctx: CheckContext) -> None:
    """WIR-049: an integer of 10^5 digits in any argument is refused, never answered internal."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        members = ("conversationId", "drafts", "expectedHead", "fromSeq", "toSeq", "limit",
                   "archive", "transition", "eventId", "occurredAt", "runId", "after",
                   "data", "mediaType", "operation", "reference", "reason", "bundle",
                   "requester", "query", "scope", "definition", "maxEvents", "name",
                   "projections", "location", "authorize")
        # every other member legal-looking (a request ignores the members its row does not
        # name, WIR-026), so the integer is judged where it stands, not after a null; but no
        # `location`: an openStore that succeeded would make a persistent store (a file in the
        # server's working directory, a PostgreSQL schema) that nothing removes
        base: dict[str, Any] = {
            "store": handle, "conversationId": "h", "drafts": [_draft_map("w-h1", 1)],
            "fromSeq": 1, "toSeq": 2, "limit": 10, "eventId": "w-h2",
            "occurredAt": "2024-05-01T12:00:00Z", "runId": "r", "data": b"x",
            "mediaType": "text/plain", "operation": {"operationId": "o", "authorization": {}},
            "reference": "r", "reason": "deleted", "requester": "u", "query": "q",
            "maxEvents": 10, "name": "n",
            "definition": {"name": "n", "version": 1, "stateSchema": {}, "initialState": {},
                           "fold": "conformance.count", "kinds": None},
        }
        ident = 9000
        for op in (*sorted(OPERATIONS), *_SERVER_REQUESTS):
            placements: list[dict[str, Any]] = [{**base, "store": HUGE}]
            placements += [{**base, name: HUGE} for name in members]
            placements.append({"store": handle, "conversationId": "h",
                               "drafts": [{**_draft_map("w-h", HUGE), "schemaVersion": HUGE}]})
            for args in placements:
                ident += 1
                (reply,) = exchange(_huge_frame(ident, op, args), 1)
                error = reply.get("error") if isinstance(reply, dict) else None
                if not isinstance(reply, dict) or reply.get("id") != ident or (
                    isinstance(error, dict) and error.get("kind") == "internal"
                ):
                    where = sorted(name for name, value in args.items() if value is HUGE)
                    fail(("WIR-049", "WIR-008"), f"{op} with an integer of 10^5 digits as "
                         f"{where or 'a draft member'}: answered {str(reply)[:300]}")
        _new_store(exchange)  # still serving

    _with_channel(ctx, body)


@check("WIR-043", "WIR-031", capability=Capability.SPILLS)
def check_wire_callback_numbering(ctx: CheckContext) -> None:
    """WIR-043: each request's callback frames are numbered 1, 2, ... afresh."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        put = _ask(exchange, "putSpill", "WIR-043", store=handle, conversationId="cb",
                   data=b"x", mediaType="text/plain", reference="r", eventId="w-cb1",
                   occurredAt="2024-05-01T12:00:00Z",
                   operation={"operationId": "op", "authorization": {"user": "u"}})
        if "ok" not in put:
            fail("WIR-043", f"putSpill answered {put!r}")
        for round_ in range(1, 4):
            ident = 7700 + round_
            frames = exchange(_request(ident, "getSpill", store=handle, conversationId="cb",
                                       reference="r", authorize=True)
                              + _raw(cbor2.dumps({"callbackReply": 1, "ok": True},
                                                 canonical=True)), 2)
            first = frames[0]
            if not isinstance(first, dict) or first.get("callback") != 1:
                fail(("WIR-043", "WIR-031"), f"getSpill number {round_}: the first callback "
                     f"frame of the request is {first!r}, expected callback id 1")
            if not isinstance(frames[1], dict) or frames[1].get("ok") != b"x":
                fail("WIR-043", f"getSpill number {round_} answered {frames[1]!r}")

    _with_channel(ctx, body)
