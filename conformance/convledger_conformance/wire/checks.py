"""Checks of chapter WIR: the wire protocol, at the level of frames.

When the store under test is a wire store (``--command``), these checks send
frames to its server through the same connection, including frames the proxy
itself never writes (malformed ones, unknown request types). When it is an
in-process store, they check the reference server (:class:`WireServer`)
serving stores of the factory under test, so the protocol's reference side is
judged in every run. WIR-009 and WIR-011's client side judge this suite's own
client (:mod:`convledger_conformance.wire.client`), with real subprocesses.
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import cbor2

import convledger
from convledger.errors import ERROR_KINDS
from convledger.projections.named import counting
from convledger.store import Capability, LedgerStore
from convledger.wire.frames import decode_body, encode_frame
from convledger.wire.server import CARRIED, OPERATIONS, PROTOCOL_VERSION, WireServer
from convledger.wire.values import INTERNAL
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    accepted,
    archive,
    draft,
    fail,
    refused,
    run_once,
    untyped,
    wires,
)
from convledger_conformance.wire.client import (
    ServerExitedError,
    WireError,
    WireStore,
    WireStoreFactory,
    WireTimeoutError,
)

Exchange = Callable[[bytes, int], list[Any]]


def _channel(ctx: CheckContext) -> tuple[Exchange, Callable[[], None]]:
    """Send raw frames to the server under test and read its replies; and a closer.

    Over a wire store, the frames go to its server (greeted already); in
    process, to a reference server greeted here.
    """
    store = ctx.factory()
    if isinstance(store, WireStore):
        connection = store.connection
        return connection.exchange_raw, store.close
    store.close()
    server = WireServer(ctx.factory)
    replies = server.answer_frames(_request(0, "hello", protocol=PROTOCOL_VERSION))
    if "ok" not in replies[0]:
        fail("WIR-006", f"the reference server refused hello: {replies[0]!r}")
    return (lambda data, count: server.answer_frames(data)[:count]), lambda: None


def _request(ident: int, op: str, **args: Any) -> bytes:
    return encode_frame({"id": ident, "op": op, "args": args})


def _raw(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


_IDS = iter(range(10**9, 2**62))


def _ask(exchange: Exchange, op: str, ids: str | tuple[str, ...], **args: Any) -> dict[str, Any]:
    """One request; its reply, after checking id and the ok/error shape (WIR-005)."""
    ident = next(_IDS)
    (reply,) = exchange(_request(ident, op, **args), 1)
    if not isinstance(reply, dict) or reply.get("id") != ident:
        fail(("WIR-005", *((ids,) if isinstance(ids, str) else ids)),
             f"{op}: {reply!r} does not carry the request's id {ident}")
    if ("ok" in reply) == ("error" in reply):
        fail("WIR-005", f"{op}: {reply!r} has not exactly one of ok and error")
    return reply


def _refusal(reply: dict[str, Any], kind: str, ids: str | tuple[str, ...], what: str) -> None:
    error = reply.get("error")
    if not isinstance(error, dict) or error.get("kind") != kind:
        fail(ids, f"{what}: answered {reply!r}, expected an error of kind {kind!r}")


def _new_store(exchange: Exchange) -> tuple[int, list[str]]:
    reply = _ask(exchange, "newStore", "WIR-020")
    created = reply.get("ok")
    if not isinstance(created, dict) or not isinstance(created.get("store"), int):
        fail("WIR-020", f"newStore answered {reply!r}")
    return created["store"], created.get("capabilities", [])


def _with_channel(ctx: CheckContext, body: Callable[[Exchange], None]) -> None:
    exchange, close = _channel(ctx)
    try:
        body(exchange)
    finally:
        close()


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


def _draft_map(event_id: str, value: object) -> dict[str, Any]:
    return {
        "eventId": event_id,
        "kind": "state/set",
        "occurredAt": "2024-05-01T12:00:00Z",
        "payload": {"name": "slot", "version": 1, "value": value, "actor": "wire"},
        "schemaVersion": 1,
        "ignorable": False,
    }


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
                fail("WIR-004", f"{name}: the reply's id is {reply.get('id')!r}")
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


@check("WIR-009")
def check_wire_client_failures(ctx: CheckContext) -> None:
    """WIR-009: a server that hangs, exits or babbles is a WireError, never a store refusal."""
    python = sys.executable
    servers = {
        "hangs": ([python, "-c", "import time; time.sleep(60)"], WireTimeoutError),
        "exits": ([python, "-c", "import sys; sys.stdin.buffer.read(4); sys.exit(3)"],
                  ServerExitedError),
        "babbles": ([python, "-c", "import sys; sys.stdout.write('hello\\n'); sys.stdout.flush();"
                     " sys.stdin.read()"], WireError),
        "is missing": (["/nonexistent/convledger-wire-server"], ServerExitedError),
    }
    for name, (argv, expected) in servers.items():
        factory = WireStoreFactory(argv, timeout=0.5)
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


@check("WIR-010", "WIR-011", "WIR-012")
def check_wire_values(ctx: CheckContext) -> None:
    """WIR-010 .. WIR-012: numbers, payloads and drafts keep their meaning on the wire."""

    def body(store: LedgerStore) -> None:
        values: list[Any] = [1.0, 2.5, -0.0, 1e16, 1e21, 5e-324, 2**53 - 1, -(2**53 - 1),
                                {"k": [True, None, "\u00e9\U0001f600"]}, 0.1]
        placed = store.append("c", [draft(f"w-v{n}", value) for n, value in enumerate(values)])
        read = store.read("c").items
        if [e.canonical_bytes() for e in placed] != [e.canonical_bytes() for e in read]:
            fail("WIR-011", "append and read disagree on the canonical bytes of payloads")
        for envelope, value in zip(read, values, strict=True):
            got = envelope.payload["value"] if isinstance(envelope.payload, dict) else None
            if got != value:
                fail("WIR-011", f"the payload value {value!r} came back as {got!r}")
        for n, big in enumerate((2**53, -(2**53), 2**64, -(2**64) - 1, 2**70)):
            refused(partial(store.append, "c", [draft(f"w-big{n}", big)]), "invalid_input",
                    "WIR-010", f"a payload integer {big}", store=store, touched=["c"])
        bads: tuple[Any, ...] = (float("nan"), float("inf"), {1: "x"}, b"bytes")
        for n, bad in enumerate(bads):
            refused(partial(store.append, "c", [draft(f"w-bad{n}", bad)]), "invalid_input",
                    "WIR-011", f"a payload {bad!r}", store=store, touched=["c"])
        refused(partial(store.append, "c", [draft("w-lone", "\ud800")]), "invalid_input",
                "WIR-011", "a payload with a lone surrogate", store=store, touched=["c"])
        refused(partial(untyped(store).append, "c", [{"eventId": "w-map"}]), "invalid_input",
                "WIR-012", "a map in place of a draft", store=store, touched=["c"])
        data = archive("e", [{**wires("e", [draft("w-ig", 1)])[0], "ignorable": True,
                              "kind": "x/unknown"}])
        accepted(partial(store.import_conversation, data), "WIR-012", "an ignorable import")
        (envelope,) = store.read("e").items
        if envelope.ignorable is not True or store.export_conversation("e") != data:
            fail("WIR-012", "an ignorable envelope lost its flag on the wire")

    run_once(ctx, body)


@check("WIR-013", "WIR-014")
def check_wire_ledger_requests(ctx: CheckContext) -> None:
    """WIR-013, WIR-014: ledger requests take their defaults, archives travel as bytes."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        batch = [_draft_map(f"w-l{n}", n) for n in range(3)]
        _ask(exchange, "append", "WIR-013", store=handle, conversationId="c", drafts=batch)
        page = _ask(exchange, "read", "WIR-013", store=handle, conversationId="c").get("ok")
        if not isinstance(page, dict) or len(page.get("items", [])) != 3 or "nextSeq" in page:
            fail("WIR-013", f"read with defaults answered {page!r}")
        limited = _ask(exchange, "read", "WIR-013", store=handle, conversationId="c",
                       fromSeq=2, limit=1).get("ok")
        if not isinstance(limited, dict) or limited.get("nextSeq") != 3:
            fail("WIR-013", f"read from 2 limit 1 answered {limited!r}")
        odd: dict[str, dict[str, Any]] = {
            "limit '10'": {"limit": "10"}, "limit 0": {"limit": 0},
            "fromSeq true": {"fromSeq": True}, "toSeq 1.0": {"toSeq": 1.0},
        }
        for name, args in odd.items():
            reply = _ask(exchange, "read", "WIR-013", store=handle, conversationId="c", **args)
            _refusal(reply, "invalid_input", "WIR-013", f"read with {name}")
        exported = _ask(exchange, "exportConversation", "WIR-014", store=handle,
                        conversationId="c").get("ok")
        if not isinstance(exported, bytes):
            fail("WIR-014", f"an export travelled as {type(exported).__name__}")
        target, _ = _new_store(exchange)
        as_text = _ask(exchange, "importConversation", "WIR-014", store=target,
                       archive=exported.decode("utf-8"))
        _refusal(as_text, "invalid_input", "WIR-014", "an archive sent as text")
        report = _ask(exchange, "importConversation", "WIR-014", store=target, archive=exported)
        if report.get("ok") != {"conversationId": "c", "events": 3, "headSeq": 3}:
            fail("WIR-014", f"import answered {report!r}")
        again = _ask(exchange, "exportConversation", "WIR-014", store=target, conversationId="c")
        if again.get("ok") != exported:
            fail("WIR-014", "an imported archive exports other bytes over the wire")

    _with_channel(ctx, body)


@check("WIR-015", capability=Capability.TRANSITIONS)
def check_wire_runtime_requests(ctx: CheckContext) -> None:
    """WIR-015: runtime requests answer in their wire forms."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        accept = {"type": "accept", "input": {
            "idempotencyKey": "k", "inputId": "i", "runId": "r", "assistantMessageId": "a",
            "message": {"text": "hi"}}}
        outcome = _ask(exchange, "transition", "WIR-015", store=handle, conversationId="c",
                       transition=accept, eventId="w-t1",
                       occurredAt="2024-05-01T12:00:00Z").get("ok")
        if not isinstance(outcome, dict) or outcome.get("status") != "applied" or not (
            isinstance(outcome.get("event"), dict) and outcome["event"].get("seq") == 1
        ):
            fail("WIR-015", f"an accept answered {outcome!r}")
        run = _ask(exchange, "loadRun", "WIR-015", store=handle, conversationId="c",
                   runId="r").get("ok")
        if not isinstance(run, dict) or run.get("runId") != "r" or run.get("state") != "queued":
            fail("WIR-015", f"loadRun answered {run!r}")
        active = _ask(exchange, "listActiveRuns", "WIR-015", store=handle, conversationId="c")
        if [item.get("runId") for item in active.get("ok", [])] != ["r"]:
            fail("WIR-015", f"listActiveRuns answered {active!r}")
        snapshot = _ask(exchange, "loadSnapshot", "WIR-015", store=handle,
                        conversationId="c").get("ok")
        if not isinstance(snapshot, dict) or set(snapshot) != {"head", "activeRuns", "messages"}:
            fail("WIR-015", f"loadSnapshot answered {snapshot!r}")
        scan = _ask(exchange, "scanRecoverable", "WIR-015", store=handle).get("ok")
        if not isinstance(scan, dict) or scan.get("runs") != []:
            fail("WIR-015", f"scanRecoverable answered {scan!r}")
        unknown = _ask(exchange, "transition", "WIR-015", store=handle, conversationId="c",
                       transition={"type": "launch", "input": {}}, eventId="w-t2",
                       occurredAt="2024-05-01T12:00:00Z")
        _refusal(unknown, "invalid_input", "WIR-015", "a transition of unknown type")

    _with_channel(ctx, body)


@check("WIR-020")
def check_wire_store_handles(ctx: CheckContext) -> None:
    """WIR-020: each newStore is fresh and separate; closed and unknown handles are refused."""

    def body(exchange: Exchange) -> None:
        first, declared = _new_store(exchange)
        second, _ = _new_store(exchange)
        if first == second:
            fail("WIR-020", "two newStore requests answered the same handle")
        _ask(exchange, "append", "WIR-020", store=first, conversationId="c",
             drafts=[_draft_map("w-h1", 1)])
        head = _ask(exchange, "head", "WIR-020", store=second, conversationId="c").get("ok")
        if head != 0:
            fail("WIR-020", f"a new store sees another handle's events (head {head!r})")
        reused = _ask(exchange, "append", "WIR-020", store=second, conversationId="c",
                      drafts=[_draft_map("w-h1", 1)])
        if "ok" not in reused:
            fail("WIR-020", f"a new store shares eventIds with another handle: {reused!r}")
        if Capability.PERSISTENCE.value in declared:
            reopened = _ask(exchange, "reopen", "WIR-020", store=first).get("ok")
            if not isinstance(reopened, dict):
                fail("WIR-020", f"reopen answered {reopened!r}")
            head = _ask(exchange, "head", "WIR-020", store=reopened["store"],
                        conversationId="c").get("ok")
            if head != 1:
                fail("WIR-020", f"the reopened handle sees head {head!r}")
            retired = _ask(exchange, "head", "WIR-020", store=first, conversationId="c")
            _refusal(retired, "invalid_input", "WIR-020", "the handle retired by reopen")
            first = reopened["store"]
        _ask(exchange, "close", "WIR-020", store=first)
        closed = _ask(exchange, "head", "WIR-020", store=first, conversationId="c")
        _refusal(closed, "invalid_input", "WIR-020", "a closed handle")
        unknown = _ask(exchange, "head", "WIR-020", store=2**40, conversationId="c")
        _refusal(unknown, "invalid_input", "WIR-020", "a handle never opened")
        _ask(exchange, "close", "WIR-020", store=second)

    _with_channel(ctx, body)


@check("WIR-021")
def check_wire_declaration(ctx: CheckContext) -> None:
    """WIR-021: a declared capability is one the protocol carries and the server serves."""

    def body(exchange: Exchange) -> None:
        handle, declared = _new_store(exchange)
        carried = {item.value for item in CARRIED}
        extra = sorted(set(declared) - carried)
        if extra:
            fail("WIR-021", f"the server declares {extra}, which the protocol does not carry")
        for op, entry in OPERATIONS.items():
            if entry.capability.value not in declared:
                continue
            reply = _ask(exchange, op, "WIR-021", store=handle, conversationId="wir-021")
            error = reply.get("error")
            if isinstance(error, dict) and error.get("kind") == "not_supported":
                fail("WIR-021", f"{op} is not_supported though {entry.capability.value!r} "
                     "is declared")
        _ask(exchange, "close", "WIR-021", store=handle)

    _with_channel(ctx, body)
    with_everything = WireServer(lambda: _AllCapabilities(ctx.factory()))
    with_everything.answer_frames(_request(0, "hello", protocol=PROTOCOL_VERSION))
    (reply,) = with_everything.answer_frames(_request(1, "newStore"))
    if set(reply["ok"]["capabilities"]) - {item.value for item in CARRIED}:
        fail("WIR-021", "the reference server passes on capabilities it cannot serve")


class _AllCapabilities:
    """A store that claims every capability (to see the reference server filter them)."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset(Capability)

    def close(self) -> None:
        self._store.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


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


@check("WIR-031", "WIR-032", "WIR-033", "WIR-034")
def check_wire_client_callbacks(ctx: CheckContext) -> None:
    """WIR-031 .. WIR-034: this suite's client answers callbacks exactly, in time, and alone."""
    from convledger_conformance.wire.client import WireConnection, WireProtocolError

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

        def slow(_: object) -> bool:
            time.sleep(1.5)
            return True

        connection.timeout = 1.0  # shorter than the callback: only the server's time counts
        try:
            answered = connection.request("probe", {}, callback=slow)
        finally:
            connection.timeout = 30.0
        if answered != {"callbackReply": 7, "ok": True}:
            fail("WIR-033", "a callback slower than the timeout was not answered")

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
