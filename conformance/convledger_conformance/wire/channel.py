"""The raw channel of the wire checks: frames to the server under test, its replies (chapter WIR).

When the store under test is a wire store (``--command``), the frames go to
its server through the same connection, including frames the proxy itself
never writes (malformed ones, unknown request types). When it is an
in-process store, they go to the reference server (:class:`WireServer`)
serving stores of the factory under test, so the protocol's reference side is
judged in every run.

Shared by :mod:`convledger_conformance.wire.checks`,
:mod:`~convledger_conformance.wire.checks_requests` and
:mod:`~convledger_conformance.wire.checks_callbacks`: one request with its
reply checked for the request's id and exactly one of ok and error (WIR-005),
expected refusals, ``newStore`` (WIR-020), a draft as a wire map, and a store
claiming every capability (WIR-021).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from convledger.store import Capability, LedgerStore
from convledger.wire.frames import encode_frame
from convledger.wire.server import PROTOCOL_VERSION, WireServer
from convledger_conformance.registry import CheckContext
from convledger_conformance.support import (
    fail,
)
from convledger_conformance.wire.store import WireStore

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


def _draft_map(event_id: str, value: object) -> dict[str, Any]:
    return {
        "eventId": event_id,
        "kind": "state/set",
        "occurredAt": "2024-05-01T12:00:00Z",
        "payload": {"name": "slot", "version": 1, "value": value, "actor": "wire"},
        "schemaVersion": 1,
        "ignorable": False,
    }


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
