"""Checks of chapter WIR: store-interface requests (WIR-010 .. WIR-015, WIR-020, WIR-021).

Values and their CBOR images (WIR-010 .. WIR-012; WIR-011's client side
judges this suite's own client, :mod:`convledger_conformance.wire.client`),
the ledger and runtime requests (WIR-013 .. WIR-015), store handles
(WIR-020) and the capability declaration (WIR-021). Frames go through
:mod:`convledger_conformance.wire.channel`; the frame-level checks are in
:mod:`convledger_conformance.wire.checks`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from convledger.store import Capability, LedgerStore
from convledger.wire.server import CARRIED, OPERATIONS, PROTOCOL_VERSION, WireServer
from convledger_conformance.ledger.model import read_whole
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
from convledger_conformance.wire.channel import (
    Exchange,
    _AllCapabilities,
    _ask,
    _draft_map,
    _new_store,
    _refusal,
    _request,
    _with_channel,
)


@check("WIR-010", "WIR-011", "WIR-012")
def check_wire_values(ctx: CheckContext) -> None:
    """WIR-010 .. WIR-012: numbers, payloads and drafts keep their meaning on the wire."""

    def body(store: LedgerStore) -> None:
        values: list[Any] = [1.0, 2.5, -0.0, 1e16, 1e21, 5e-324, 2**53 - 1, -(2**53 - 1),
                                {"k": [True, None, "\u00e9\U0001f600"]}, 0.1]
        placed = store.append("c", [draft(f"w-v{n}", value) for n, value in enumerate(values)])
        read = read_whole(store, "c")
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
        (envelope,) = read_whole(store, "e")
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


# Judges whatever the server declares, so no capability is a precondition of WIR-021.
@check("WIR-021", optional=tuple(item for item in Capability if item is not Capability.LEDGER))
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


DETAILS: dict[str, dict[str, type]] = {
    "conflict": {"actual": int},
    "duplicate": {"identity": str},
    "replay_refused": {"conversationId": str, "seq": int, "eventId": str,
                       "schemaVersion": int, "eventKind": str},
    "purged": {"conversationId": str},
    "not_supported": {"capability": str},
}
"""WIR-025: the members of ``details`` of the kinds that carry some, with their types."""


def _details(reply: dict[str, Any], kind: str, expected: dict[str, Any], what: str) -> None:
    """The refusal's details hold exactly ``expected`` (besides an optional ``field``)."""
    _refusal(reply, kind, "WIR-025", what)
    details = reply["error"].get("details", {})
    if not isinstance(details, dict):
        fail("WIR-025", f"{what}: details {details!r} are not a map")
    for name in details:
        if name not in DETAILS.get(kind, {}) and not (kind == "invalid_input" and name == "field"):
            fail("WIR-025", f"{what}: details carry {name!r}, which the table of {kind} lacks")
    for name, value in expected.items():
        got = details.get(name)
        if got != value or type(got) is not DETAILS[kind][name]:
            fail("WIR-025", f"{what}: details.{name} is {got!r}, expected {value!r}")


@check("WIR-025", "RPL-003", optional=(Capability.PURGE,))
def check_wire_error_details(ctx: CheckContext) -> None:
    """WIR-025, RPL-003: each refusal's details carry the members of its kind, by those names."""

    def body(exchange: Exchange) -> None:
        handle, declared = _new_store(exchange)
        stored = _draft_map("w-d1", 1)
        _ask(exchange, "append", "WIR-025", store=handle, conversationId="c", drafts=[stored])
        stale = _ask(exchange, "append", "WIR-025", store=handle, conversationId="c",
                     drafts=[_draft_map("w-d2", 2)], expectedHead=5)
        _details(stale, "conflict", {"actual": 1}, "an append with a stale expected head")
        again = _ask(exchange, "append", "WIR-025", store=handle, conversationId="d",
                     drafts=[stored])
        _details(again, "duplicate", {"identity": "w-d1"}, "an append of a stored eventId")
        event = {**wires("r", [draft("w-r1", kind="x/unknown", payload={},
                                     schema_version=3)])[0]}
        refused_import = _ask(exchange, "importConversation", "WIR-025", store=handle,
                              archive=archive("r", [event]))
        _details(refused_import, "replay_refused",
                 {"conversationId": "r", "seq": 1, "eventId": "w-r1", "schemaVersion": 3,
                  "eventKind": "x/unknown"}, "an import of an unknown, non-ignorable event")
        bad = _ask(exchange, "read", "WIR-025", store=handle, conversationId="c", limit=0)
        _details(bad, "invalid_input", {}, "a read with limit 0")
        # Another formatVersion (ARC-002, ARC-018) is no undeclared capability: its
        # `capability` is empty text or absent, never a name of its own.
        newer = archive("v", []).replace(b'"formatVersion":1', b'"formatVersion":2')
        other = _ask(exchange, "importConversation", "WIR-025", store=handle, archive=newer)
        _refusal(other, "not_supported", "WIR-025", "an import of formatVersion 2")
        details = other["error"].get("details", {})
        if isinstance(details, dict) and details.get("capability", "") != "":
            fail("WIR-025", f"an import of formatVersion 2: details.capability is "
                            f"{details['capability']!r}, expected empty text or no member")
        _details(other, "not_supported", {}, "an import of formatVersion 2")
        if "purge" in declared:
            _ask(exchange, "purge", "WIR-025", store=handle, conversationId="c")
            late = _ask(exchange, "append", "WIR-025", store=handle, conversationId="c",
                        drafts=[_draft_map("w-d3", 3)])
            _details(late, "purged", {"conversationId": "c"}, "an append to a purged conversation")
        _ask(exchange, "close", "WIR-025", store=handle)

    _with_channel(ctx, body)


@check("WIR-026", "WIR-013")
def check_wire_null_arguments(ctx: CheckContext) -> None:
    """WIR-026: a null argument is the value null; an unnamed member is ignored."""

    def body(exchange: Exchange) -> None:
        handle, _ = _new_store(exchange)
        appended = _ask(exchange, "append", "WIR-026", store=handle, conversationId="c",
                        drafts=[_draft_map("w-n1", 1)], expectedHead=None)
        if not isinstance(appended.get("ok"), list):
            fail("WIR-026", f"an append with expectedHead null answered {appended!r}")
        page = _ask(exchange, "read", "WIR-026", store=handle, conversationId="c", toSeq=None)
        if not isinstance(page.get("ok"), dict) or "nextSeq" in page["ok"]:
            fail(("WIR-026", "WIR-013"), f"a read with toSeq null answered {page!r}")
        for name in ("fromSeq", "limit"):
            reply = _ask(exchange, "read", "WIR-026", store=handle, conversationId="c",
                         **{name: None})
            _refusal(reply, "invalid_input", "WIR-026", f"a read with {name} null")
        head = _ask(exchange, "head", "WIR-026", store=handle, conversationId="c",
                    unnamed="ignored")
        if head.get("ok") != 1:
            fail("WIR-026", f"a head with a member its row does not name answered {head!r}")
        _ask(exchange, "close", "WIR-026", store=handle)

    _with_channel(ctx, body)
