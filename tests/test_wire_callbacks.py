"""Spills, search and projections over the wire: callbacks, bytes and named folds (WIR-016..034).

Broken servers below are real ``serve-wire`` subprocesses: ``GrantsTruthy``
is a :class:`WireServer` whose reverse calls grant on any truthy ``ok``
(breaking WIR-032), run with this directory on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convledger.canonical import JsonValue
from convledger.errors import InvalidInputError, UnauthorizedError
from convledger.memory import MemoryStore
from convledger.projections.named import counting, failing
from convledger.wire.frames import encode_frame
from convledger.wire.server import PROTOCOL_VERSION, WireServer
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED, PASSED
from convledger_conformance.runner import run_suite
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import WireProtocolError

HERE = Path(__file__).resolve().parent
SERVE = [sys.executable, "-m", "convledger", "serve-wire"]
STAMP = "2024-05-01T12:00:00Z"
GRANT: dict[str, JsonValue] = {"user": "u-1"}


@pytest.fixture(params=["memory", "sqlite"])
def served(request: pytest.FixtureRequest) -> Iterator[WireStoreFactory]:
    """A factory over ``convledger serve-wire --store memory|sqlite``, stopped afterwards."""
    factory = WireStoreFactory([*SERVE, "--store", request.param])
    yield factory
    factory.close()


def put(store: Any, reference: str = "r", data: bytes = b"\x00\xffdata") -> None:
    """Put one spill granted to ``GRANT``."""
    store.put_spill("c", data, media_type="application/octet-stream",
                    operation={"operationId": "op", "authorization": GRANT},
                    reference=reference, event_id=f"put-{reference}", occurred_at=STAMP)


def test_get_spill_asks_the_client_callback_each_time(served: WireStoreFactory) -> None:
    """get_spill calls the client's callback with the descriptor on every call; bytes are exact."""
    store = served()
    put(store)
    asked: list[object] = []

    def recording(descriptor: JsonValue) -> bool:
        asked.append(descriptor)
        return True

    assert store.get_spill("c", "r", authorize=recording) == b"\x00\xffdata"
    assert store.get_spill("c", "r", authorize=recording) == b"\x00\xffdata"
    assert asked == [GRANT, GRANT]


def test_only_exactly_true_grants_over_the_wire(served: WireStoreFactory) -> None:
    """A truthy answer, a raising callback or a revoked grant is unauthorized (WIR-032)."""
    store = served()
    put(store)

    def raising(_: JsonValue) -> bool:
        raise PermissionError("revoked")

    for callback in (lambda _: 1, lambda _: "yes", lambda _: False, raising):
        with pytest.raises(UnauthorizedError):
            store.get_spill("c", "r", authorize=callback)
    with pytest.raises(InvalidInputError):
        store.get_spill("c", "r", authorize=None)


def test_bundles_travel_as_bytes(served: WireStoreFactory) -> None:
    """export_bundle gives bytes that import_bundle takes back unchanged (WIR-016)."""
    source, target = served(), served()
    put(source, data=bytes(range(256)))
    bundle = source.export_bundle("c")
    assert isinstance(bundle, bytes)
    assert target.import_bundle(bundle).head_seq == 1
    assert target.export_bundle("c") == bundle
    assert target.get_spill("c", "r", authorize=lambda d: d == GRANT) == bytes(range(256))


def test_search_asks_only_about_foreign_conversations() -> None:
    """search calls back per foreign conversation, never for the requester's own (WIR-030)."""
    factory = WireStoreFactory([*SERVE, "--store", "sqlite"])
    try:
        store = factory()
        from convledger_conformance.support import draft

        for cid in ("me", "a", "b"):
            store.append(cid, [draft(f"e-{cid}", {"text": "wire needle"})])
        asked: list[str] = []

        def only_a(cid: str) -> bool:
            asked.append(cid)
            return cid == "a"

        hits = store.search("me", "needle", authorize=only_a)
        assert [(hit.conversation_id, hit.seq) for hit in hits] == [("me", 1), ("a", 1)]
        assert sorted(asked) == ["a", "b"]
        assert [hit.conversation_id for hit in store.search("me", "needle")] == ["me"]
    finally:
        factory.close()


def test_named_folds_run_in_the_server(served: WireStoreFactory) -> None:
    """catch_up of a counting definition gives the client's own fold; failing folds refuse."""
    store = served()
    from convledger_conformance.support import drafts

    store.append("c", drafts("c", 4))
    definition = counting(version=3)
    checkpoint = store.catch_up("c", definition, max_events=3)
    assert (checkpoint.upto_seq, checkpoint.state) == (3, {"count": 3, "seqs": [3, 6, 9]})
    assert store.projection_status("c", definition.name).head == 4
    with pytest.raises(InvalidInputError):
        store.catch_up("c", failing("raises"))


def test_a_fold_without_a_name_is_refused_by_the_client(served: WireStoreFactory) -> None:
    """A definition whose fold is plain code cannot travel: invalid_input (WIR-018)."""
    store = served()
    unnamed = counting(name="plain")
    object.__setattr__(unnamed, "fold", lambda state, envelope: state)
    with pytest.raises(InvalidInputError):
        store.catch_up("c", unnamed)


def test_a_stray_request_during_a_callback_is_answered_after_the_pending_one() -> None:
    """The pending request is denied, then the stray request gets invalid_input (WIR-033)."""
    server = WireServer(MemoryStore)
    frames = [{"id": 0, "op": "hello", "args": {"protocol": PROTOCOL_VERSION}},
              {"id": 1, "op": "newStore"}]
    data = b"".join(encode_frame(item) for item in frames)
    handle = server.answer_frames(data)[1]["ok"]["store"]
    put_args = {"store": handle, "conversationId": "c", "data": b"x", "mediaType": "text/plain",
                "operation": {"operationId": "op", "authorization": GRANT}, "reference": "r",
                "eventId": "e-1", "occurredAt": STAMP}
    get_args = {"store": handle, "conversationId": "c", "reference": "r", "authorize": True}
    sent = server.answer_frames(b"".join(encode_frame(item) for item in (
        {"id": 2, "op": "putSpill", "args": put_args},
        {"id": 3, "op": "getSpill", "args": get_args},
        {"id": 4, "op": "head", "args": {"store": handle, "conversationId": "c"}},
    )))
    assert [set(item) for item in sent] == [{"id", "ok"}, {"callback", "kind", "args"},
                                            {"id", "error"}, {"id", "error"}]
    assert sent[1]["args"] == {"value": GRANT}
    assert (sent[2]["id"], sent[2]["error"]["kind"]) == (3, "unauthorized")
    assert (sent[3]["id"], sent[3]["error"]["kind"]) == (4, "invalid_input")


def test_a_callback_frame_for_a_request_without_callback_is_a_protocol_error() -> None:
    """A server that calls back a request that carries no callback breaks the connection."""
    code = (
        "import sys\n"
        "from convledger.wire.frames import read_frame, write_frame\n"
        "i, o = sys.stdin.buffer, sys.stdout.buffer\n"
        "r = read_frame(i)\n"
        "write_frame(o, {'id': r['id'], 'ok': {'protocol': 1, 'spec': 's', 'server': 'x',"
        " 'capabilities': ['ledger'], 'operations': []}})\n"
        "r = read_frame(i)\n"
        "write_frame(o, {'id': r['id'], 'ok': {'store': 1, 'capabilities': ['ledger']}})\n"
        "r = read_frame(i)\n"
        "write_frame(o, {'callback': 1, 'kind': 'authorize', 'args': {'value': 'c'}})\n"
        "sys.stdin.buffer.read()\n"
    )
    factory = WireStoreFactory([sys.executable, "-c", code], timeout=10)
    try:
        store = factory()
        with pytest.raises(WireProtocolError):
            store.head("c")
    finally:
        factory.close()


class GrantsTruthy(WireServer):
    """Breaks WIR-032: its reverse calls grant on any truthy ``ok``."""

    def _reverse_caller(self, requests: Any, send: Any) -> Any:
        """The reference caller, but granting on a truthy ``ok``."""
        from convledger.wire.frames import read_frame

        def authorize(value: object) -> bool:
            send({"callback": 1, "kind": "authorize", "args": {"value": value}})
            return bool(read_frame(requests).get("ok"))

        return authorize


def serve_grants_truthy() -> None:
    """Serve memory stores with :class:`GrantsTruthy` on stdin/stdout."""
    sys.exit(GrantsTruthy(MemoryStore).serve(sys.stdin.buffer, sys.stdout.buffer))


def test_a_server_granting_truthy_callback_replies_is_caught() -> None:
    """The WIR checks fail WIR-032 against a server that grants on ok: 1, and pass the reference."""
    code = "import test_wire_callbacks as t; t.serve_grants_truthy()"
    environment = dict(os.environ)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(HERE), environment.get("PYTHONPATH")])
    )
    checks = [item for item in all_checks() if "WIR-032" in item.ids]
    broken = WireStoreFactory([sys.executable, "-c", code], timeout=30)
    try:
        report = run_suite(broken, profile="smoke", derandomize=True, checks=checks)
    finally:
        broken.close()
        os.environ.clear()
        os.environ.update(environment)
    statuses = {item.id: item.status for item in report.requirements}
    assert statuses["WIR-032"] == FAILED
    reference = WireStoreFactory([*SERVE])
    try:
        good = run_suite(reference, profile="smoke", derandomize=True, checks=checks)
    finally:
        reference.close()
    assert {item.id: item.status for item in good.requirements}["WIR-032"] == PASSED
