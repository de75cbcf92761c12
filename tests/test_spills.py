"""Spill objects in both reference stores: bad input, faults, corruption, bundles across stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import cbor2
import pytest

from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.spills import MAX_SPILL_BYTES, SpillMetadata
from convledger.spills.store import SpillStore
from convledger.sqlite import SqliteStore

STAMP = "2024-01-01T00:00:00Z"
OPERATION: dict[str, JsonValue] = {"operationId": "op", "authorization": {"who": "u"}}


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SpillStore]:
    """A fresh store of each reference kind."""
    made: SpillStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "s.sqlite")
    )
    yield made
    made.close()


def put(store: SpillStore, reference: str, data: bytes, event_id: str,
        cid: str = "c") -> SpillMetadata:
    """A valid put."""
    return store.put_spill(cid, data, media_type="text/plain", operation=OPERATION,
                           reference=reference, event_id=event_id, occurred_at=STAMP)


def observable(store: SpillStore) -> tuple[object, ...]:
    """Bundle bytes, head and what a get returns: what a later call can observe."""
    return store.export_bundle("c"), store.head("c"), store.get_spill(
        "c", "kept", authorize=lambda _: True
    )


GOOD: dict[str, object] = {"data": b"ok", "media_type": "image/png", "operation": OPERATION,
                           "reference": "new", "event_id": "new-event", "occurred_at": STAMP}
BAD_PUTS: list[tuple[str, object]] = [
    ("data", bytearray(b"ok")), ("data", memoryview(b"ok")), ("data", "ok"), ("data", 7),
    ("data", [1, 2]), ("data", b"\x00" * (MAX_SPILL_BYTES + 1)),
    ("media_type", "TEXT/PLAIN"), ("media_type", "text/"), ("media_type", "/plain"),
    ("media_type", "text/plain;"), ("media_type", "text plain"), ("media_type", None),
    ("media_type", "t/" + "x" * 300),
    ("reference", ""), ("reference", None), ("reference", "\ud800"), ("reference", "r" * 1025),
    ("operation", None), ("operation", {}), ("operation", {"operationId": "op"}),
    ("operation", {"operationId": 1, "authorization": {}}),
    ("operation", {"operationId": "op", "authorization": []}),
    ("event_id", ""), ("event_id", "kept-event"), ("occurred_at", "2024-01-01"),
]


@pytest.mark.parametrize(("field", "value"), BAD_PUTS,
                         ids=[f"{f}-{str(v)[:12]!r}" for f, v in BAD_PUTS])
def test_bad_put_refused_store_unchanged(store: SpillStore, field: str, value: object) -> None:
    """SPL-002 .. SPL-006, LED-003: a bad put is refused with a typed error, nothing changes."""
    put(store, "kept", b"kept bytes", "kept-event")
    before = observable(store)
    arguments = {**GOOD, field: value}
    data = arguments.pop("data")
    with pytest.raises(LedgerError) as caught:
        store.put_spill("c", data, **arguments)  # type: ignore[arg-type]
    assert caught.value.kind == ("duplicate" if value == "kept-event" else "invalid_input")
    assert observable(store) == before
    with pytest.raises(LedgerError) as missing:
        store.get_spill("c", "new", authorize=lambda _: True)
    assert missing.value.kind == "not_found"


def test_largest_object_accepted(store: SpillStore) -> None:
    """SPL-003: an object of exactly 16 MiB is stored and returned whole."""
    data = bytes(range(256)) * (MAX_SPILL_BYTES // 256)
    assert put(store, "big", data, "e-big").size == MAX_SPILL_BYTES
    assert store.get_spill("c", "big", authorize=lambda _: True) == data


@pytest.mark.parametrize("label", ["event", "spill"])
def test_sqlite_fault_during_put_leaves_nothing(tmp_path: Path, label: str) -> None:
    """SPL-001: a failure inside put_spill's transaction leaves neither event nor object."""

    def probe(seen: str) -> None:
        if seen == label:
            raise RuntimeError(label)

    store = SqliteStore(tmp_path / "f.sqlite", fault_probe=probe)
    with pytest.raises(RuntimeError):
        put(store, "r", b"data", "e-1")
    assert store.head("c") == 0
    with pytest.raises(LedgerError) as caught:
        store.get_spill("c", "r", authorize=lambda _: True)
    assert caught.value.kind == "not_found"
    store.close()


def test_memory_corruption_detected() -> None:
    """SPL-022: bytes that no longer match their sha256 are integrity, never returned."""
    store = MemoryStore()
    metadata = put(store, "r", b"true bytes", "e-1")
    store._spills["c"]["r"] = (metadata, b"TRUE bytes")
    with pytest.raises(LedgerError) as caught:
        store.get_spill("c", "r", authorize=lambda _: True)
    assert caught.value.kind == "integrity"
    with pytest.raises(LedgerError) as denied:
        store.get_spill("c", "r", authorize=lambda _: False)
    assert denied.value.kind == "unauthorized"


def test_bundle_travels_between_stores_byte_identically(tmp_path: Path) -> None:
    """SPL-050, SPL-052: memory -> SQLite -> memory keeps the bundle bytes."""
    source = MemoryStore()
    put(source, "b", b"\x00\x01binary", "e-1")
    put(source, "a", b"", "e-2")
    source.delete_spill("c", "a", event_id="e-3", occurred_at=STAMP)
    put(source, "a", b"again", "e-4")
    bundle = source.export_bundle("c")
    middle = SqliteStore(tmp_path / "m.sqlite")
    middle.import_bundle(bundle)
    assert middle.export_bundle("c") == bundle
    back = MemoryStore()
    back.import_bundle(middle.export_bundle("c"))
    assert back.export_bundle("c") == bundle
    assert back.get_spill("c", "a", authorize=lambda d: d == {"who": "u"}) == b"again"
    middle.close()


def test_bundle_layout_is_the_specified_map(store: SpillStore) -> None:
    """SPL-050: the bundle is deterministic CBOR of {archive, format, formatVersion, objects}."""
    put(store, "r", b"xyz", "e-1")
    bundle = store.export_bundle("c")
    document = cbor2.loads(bundle)
    assert document == {"archive": store.export_conversation("c"),
                        "format": "convledger.bundle", "formatVersion": 1,
                        "objects": [["r", b"xyz"]]}
    assert cbor2.dumps(document, canonical=True) == bundle


def test_plain_import_of_spills_refused(store: SpillStore, tmp_path: Path) -> None:
    """SPL-042: a plain archive with spill metadata is refused and leaves nothing."""
    put(store, "r", b"xyz", "e-1")
    data = store.export_conversation("c")
    target = SqliteStore(tmp_path / "t.sqlite")
    with pytest.raises(LedgerError) as caught:
        target.import_conversation(data)
    assert caught.value.kind == "invalid_input"
    assert target.head("c") == 0
    target.close()


REVOKE: list[tuple[str, Callable[[JsonValue], object]]] = [
    ("False", lambda _: False), ("1", lambda _: 1), ("list", lambda _: [True]),
]


@pytest.mark.parametrize(("what", "callback"), REVOKE, ids=[w for w, _ in REVOKE])
def test_only_true_grants(store: SpillStore, what: str, callback: Callable[[JsonValue],
                                                                              object]) -> None:
    """SPL-020: any answer but True is unauthorized, and the object stays for later grants."""
    put(store, "r", b"xyz", "e-1")
    with pytest.raises(LedgerError) as caught:
        store.get_spill("c", "r", authorize=callback)  # type: ignore[arg-type]
    assert caught.value.kind == "unauthorized"
    assert store.get_spill("c", "r", authorize=lambda _: True) == b"xyz"


def test_appended_spill_event_of_a_dead_reference_allowed(store: SpillStore) -> None:
    """SPL-008: append may record spill events only for references that are not live."""
    store.append("c", [_event("spill/deleted", {"reference": "old", "bytes": 3})])
    put(store, "old", b"new", "e-1")
    with pytest.raises(LedgerError) as caught:
        store.append("c", [_event("spill/deleted", {"reference": "old", "bytes": 3}, "x2")])
    assert caught.value.kind == "invalid_input"
    assert store.export_bundle("c")  # the archive of such a ledger still imports as a bundle
    MemoryStore().import_bundle(store.export_bundle("c"))


def _event(kind: str, payload: JsonValue, event_id: str = "x1") -> object:
    from convledger.envelope import EventDraft

    return EventDraft(event_id=event_id, kind=kind, occurred_at=STAMP, payload=payload)


BAD_CALLS: list[tuple[str, str, Callable[[SpillStore], object]]] = [
    ("get reference ''", "invalid_input",
     lambda s: s.get_spill("c", "", authorize=lambda _: True)),
    ("get authorize None", "invalid_input",
     lambda s: s.get_spill("c", "kept", authorize=None)),  # type: ignore[arg-type]
    ("get authorize 'yes'", "invalid_input",
     lambda s: s.get_spill("c", "kept", authorize="yes")),  # type: ignore[arg-type]
    ("get conversation ''", "invalid_input",
     lambda s: s.get_spill("", "kept", authorize=lambda _: True)),
    ("delete reason 'gone'", "invalid_input",
     lambda s: s.delete_spill("c", "kept", reason="gone", event_id="x", occurred_at=STAMP)),
    ("delete event_id ''", "invalid_input",
     lambda s: s.delete_spill("c", "kept", event_id="", occurred_at=STAMP)),
    ("delete event_id taken", "duplicate",
     lambda s: s.delete_spill("c", "kept", event_id="kept-event", occurred_at=STAMP)),
    ("delete occurred_at bad", "invalid_input",
     lambda s: s.delete_spill("c", "kept", event_id="x", occurred_at="now")),
    ("delete unknown", "not_found",
     lambda s: s.delete_spill("c", "nope", event_id="x", occurred_at=STAMP)),
    ("export_bundle conversation ''", "invalid_input", lambda s: s.export_bundle("")),
    ("export_bundle unknown", "not_found", lambda s: s.export_bundle("nobody")),
    ("import_bundle text", "invalid_input", lambda s: s.import_bundle("x")),  # type: ignore[arg-type]
    ("import_bundle garbage", "invalid_input", lambda s: s.import_bundle(b"\x9f\xff")),
    ("import_bundle own conversation", "conflict",
     lambda s: s.import_bundle(s.export_bundle("c"))),
]


@pytest.mark.parametrize(("what", "kind", "call"), BAD_CALLS, ids=[w for w, _, _ in BAD_CALLS])
def test_bad_spill_calls_refused_store_unchanged(
    store: SpillStore, what: str, kind: str, call: Callable[[SpillStore], object]
) -> None:
    """SPL-005, SPL-020, SPL-030, SPL-051: every bad call has its typed refusal, nothing changes."""
    put(store, "kept", b"kept bytes", "kept-event")
    before = observable(store)
    with pytest.raises(LedgerError) as caught:
        call(store)
    assert caught.value.kind == kind
    assert observable(store) == before
