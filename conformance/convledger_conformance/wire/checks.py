"""Checks of chapter WIR at the level of frames (WIR-001 .. WIR-009, WIR-022 .. WIR-024).

Framing, malformed frames, replies, ``hello``, unknown request types and the
client's failures. The frames go to the server under test through
:mod:`convledger_conformance.wire.channel` (a wire store's own server, or the
reference server serving stores of the factory under test). WIR-009 judges
this suite's own client (:mod:`convledger_conformance.wire.client`), with
real subprocesses. The requests of the store interface are checked in
:mod:`convledger_conformance.wire.checks_requests`, those of optional
capabilities and the callback frames in
:mod:`convledger_conformance.wire.checks_callbacks`.
"""

from __future__ import annotations

import sys

import cbor2

import convledger
from convledger.errors import ERROR_KINDS
from convledger.wire.frames import decode_body, encode_frame
from convledger.wire.server import CARRIED, PROTOCOL_VERSION, WireServer
from convledger.wire.server import OPERATIONS as REQUESTS
from convledger.wire.values import INTERNAL
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    fail,
)
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
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import ServerExitedError, WireError, WireTimeoutError


@check("WIR-001", "WIR-002", "WIR-023")
def check_wire_frames(ctx: CheckContext) -> None:
    """WIR-001, WIR-002, WIR-023: replies are length-prefixed deterministic CBOR maps only."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        batch = [_draft_map(f"w-frame-{n}", {"b": n, "a": [1.5, -2, "x"]}) for n in range(3)]
        replies = [
            _ask(exchange, "append", "WIR-001", store=handle, conversationId="c", drafts=batch),
            _ask(exchange, "read", "WIR-001", store=handle, conversationId="c"),
            _ask(exchange, "exportConversation", "WIR-001", store=handle, conversationId="c"),
        ]
        for reply in replies:
            if "ok" not in reply:
                fail("WIR-001", f"a valid request was refused: {reply!r}")
            frame = encode_frame(reply)
            again = decode_body(frame[4:])
            if again != reply:
                fail("WIR-002", "a reply does not survive a deterministic re-encoding")
        _ask(exchange, "close", "WIR-001", store=handle)

    _with_channel(ctx, body)
    if cbor2.dumps({"bb": 1, "a": 2.0}, canonical=True) != bytes.fromhex("a26161f94000626262" "01"):
        fail("WIR-002", "this suite's encoder does not sort keys length-first or shorten floats")


@check("WIR-003", "WIR-004")
def check_wire_malformed_frames(ctx: CheckContext) -> None:
    """WIR-003, WIR-004: malformed frames are refused as invalid_input and serving goes on."""
    bad = {
        "not CBOR": _raw(b"\xff\x00"),
        "a CBOR array": _raw(cbor2.dumps([1, 2])),
        "bytes after the map": _raw(cbor2.dumps({"id": 1, "op": "newStore"}) + b"\x00"),
        "a date tag": _raw(bytes.fromhex("a2626964") + b"\x01" + bytes.fromhex("626f70")
                           + bytes.fromhex("c11a514b67b0")),
        "no op": _raw(cbor2.dumps({"id": 7})),
        "indefinite length": _raw(bytes.fromhex("bf626964") + b"\x01" + bytes.fromhex("ff")),
        "a text id": _raw(cbor2.dumps({"id": "7", "op": "newStore"})),
        "args not a map": _raw(cbor2.dumps({"id": 8, "op": "newStore", "args": [1]})),
    }

    def body(exchange: Exchange) -> None:
        for name, frame in bad.items():
            (reply,) = exchange(frame, 1)
            ids = ("WIR-003",) if name in ("a date tag", "indefinite length") else ("WIR-004",)
            if not isinstance(reply, dict):
                fail(ids, f"{name}: answered {reply!r}")
            _refusal(reply, "invalid_input", ids, name)
            expected_id = {"args not a map": 8, "no op": 7}.get(name)
            if reply.get("id") != expected_id:
                fail("WIR-004", f"{name}: the reply's id is {reply.get('id')!r}, expected "
                     f"{expected_id!r}")
            _new_store(exchange)  # still serving

    _with_channel(ctx, body)


@check("WIR-005", "WIR-008", "WIR-024")
def check_wire_replies(ctx: CheckContext) -> None:
    """WIR-005, WIR-008, WIR-024: one reply per request, in order, refusals with their kinds."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        frames = b"".join(
            _request(900 + n, "append", store=handle, conversationId="c",
                     drafts=[_draft_map(f"w-order-{n}", n)])
            for n in range(4)
        )
        replies = exchange(frames, 4)
        if [reply.get("id") for reply in replies] != [900, 901, 902, 903]:
            fail(("WIR-005", "WIR-024"), f"replies out of order: {replies!r}")
        seqs = [reply.get("ok", [{}])[0].get("seq") for reply in replies]
        if seqs != [1, 2, 3, 4]:
            fail("WIR-024", f"pipelined appends got seqs {seqs}")
        conflict = _ask(exchange, "append", "WIR-008", store=handle, conversationId="c",
                        drafts=[_draft_map("w-late", 0)], expectedHead=1)
        _refusal(conflict, "conflict", "WIR-008", "append at a stale expected head")
        if conflict["error"].get("details", {}).get("actual") != 4:
            fail("WIR-008", f"a conflict does not carry the actual head: {conflict!r}")
        duplicate = _ask(exchange, "append", "WIR-008", store=handle, conversationId="d",
                         drafts=[_draft_map("w-order-0", 0)])
        _refusal(duplicate, "duplicate", "WIR-008", "append of a stored eventId")
        for reply in (conflict, duplicate):
            kind = reply["error"]["kind"]
            if kind not in ERROR_KINDS or not isinstance(reply["error"].get("message"), str):
                fail("WIR-008", f"an error is not {{kind, message}} of chapter ERR: {reply!r}")

    _with_channel(ctx, body)
    if INTERNAL in ERROR_KINDS:
        fail("WIR-008", "internal must not be one of the refusal kinds")


UNLISTED = frozenset({"newStore", "reopen", "close", "capabilities"})
"""The requests WIR-006 keeps out of hello's ``operations``."""


@check("WIR-006", "WIR-022")
def check_wire_hello(ctx: CheckContext) -> None:
    """WIR-006, WIR-022: hello answers the versions and the declaration; other versions refused."""

    def body(exchange: Exchange) -> None:
        hello = _ask(exchange, "hello", "WIR-006", protocol=PROTOCOL_VERSION).get("ok")
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL_VERSION:
            fail("WIR-006", f"hello answered {hello!r}")
        if hello.get("spec") != convledger.SPEC_VERSION:
            fail("WIR-022", f"the server implements spec {hello.get('spec')!r}, this suite "
                 f"{convledger.SPEC_VERSION!r}")
        if not isinstance(hello.get("server"), str) or not isinstance(
            hello.get("operations"), list
        ):
            fail("WIR-006", f"hello lacks server or operations: {hello!r}")
        _, declared = _new_store(exchange)
        served = {name for name in hello["operations"] if isinstance(name, str)}
        owed = {op for op, entry in REQUESTS.items()
                if entry.capability.value in declared and op not in UNLISTED}
        if len(served) != len(hello["operations"]) or not owed <= served:
            fail("WIR-006", f"hello's operations {hello['operations']!r} lack "
                 f"{sorted(owed - served)} of the declared capabilities, or hold a non-text name")
        if sorted(hello.get("capabilities", [])) != sorted(declared):
            fail("WIR-006", "hello and newStore declare different capabilities")
        # in process, the reference server sends the factory's declaration less what the
        # protocol does not carry (WIR-021); over the wire, the run took it as sent
        if sorted(declared) != sorted(item.value for item in ctx.capabilities if item in CARRIED):
            fail("WIR-022", "the run did not take the declaration the server sent")
        other = _ask(exchange, "hello", "WIR-006", protocol=PROTOCOL_VERSION + 1)
        _refusal(other, "not_supported", "WIR-006", "hello with another protocol version")

    _with_channel(ctx, body)
    fresh = WireServer(ctx.factory)
    (early,) = fresh.answer_frames(_request(1, "newStore"))
    _refusal(early, "invalid_input", "WIR-006", "the reference server before hello")


@check("WIR-007")
def check_wire_unknown_request(ctx: CheckContext) -> None:
    """WIR-007: an unknown request type is not_supported and the server stays usable."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        for op in ("conformance/unknown", "dropTable", "APPEND"):
            reply = _ask(exchange, op, "WIR-007", store=handle, conversationId="c")
            _refusal(reply, "not_supported", "WIR-007", f"request {op!r}")
        reply = _ask(exchange, "head", "WIR-007", store=handle, conversationId="c")
        if reply.get("ok") != 0:
            fail("WIR-007", f"head after unknown requests answered {reply!r}")

    _with_channel(ctx, body)


HANG_TIMEOUT = 0.1
"""The client's timeout for the server that hangs (WIR-009): it never answers, so any timeout
is exceeded."""


@check("WIR-009")
def check_wire_client_failures(ctx: CheckContext) -> None:
    """WIR-009: a server that hangs, exits or babbles is a WireError, never a store refusal."""
    python = sys.executable
    # Only the hanging server waits for the timeout, which it exceeds whatever its length (it
    # never answers), so a short one proves WIR-009; the others end or babble on their own,
    # so they get a long one: a loaded machine may take more than a second to start Python.
    servers = {
        "hangs": ([python, "-c", "import time; time.sleep(60)"], WireTimeoutError,
                  HANG_TIMEOUT),
        "exits": ([python, "-c", "import sys; sys.stdin.buffer.read(4); sys.exit(3)"],
                  ServerExitedError, 30.0),
        "babbles": ([python, "-c", "import sys; sys.stdout.write('hello\\n'); sys.stdout.flush();"
                     " sys.stdin.read()"], WireError, 30.0),
        "is missing": (["/nonexistent/convledger-wire-server"], ServerExitedError, 30.0),
    }
    for name, (argv, expected, timeout) in servers.items():
        factory = WireStoreFactory(argv, timeout=timeout)
        try:
            factory()
        except expected:
            pass
        except Exception as error:
            fail("WIR-009", f"a server that {name}: raised {error!r}, not {expected.__name__}")
        else:
            fail("WIR-009", f"a server that {name} made a store")
        finally:
            factory.close()
