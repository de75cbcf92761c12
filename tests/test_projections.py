"""Projections in both reference stores: bad input, atomicity under faults, races, archives."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from convledger import canonical
from convledger.archive import inspect_archive
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.errors import LedgerError
from convledger.kinds import default_registry
from convledger.memory import MemoryStore
from convledger.projections import STATE_SLOTS, SUMMARY, ProjectionDefinition
from convledger.projections.store import ProjectionStore
from convledger.sqlite import SqliteStore
from convledger_conformance.projections.model import counting, expected_state

STAMP = "2024-01-01T00:00:00Z"


def slot(n: int, name: str = "s") -> EventDraft:
    """A state/set draft with eventId ``e-n``."""
    return EventDraft(event_id=f"e-{n}", kind="state/set", occurred_at=STAMP,
                      payload={"name": name, "version": 1, "value": n, "actor": "t"})


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProjectionStore]:
    """A fresh store of each reference kind."""
    made: ProjectionStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "p.sqlite")
    )
    yield made
    made.close()


def observable(store: ProjectionStore) -> tuple[object, ...]:
    """Export bytes, heads and checkpoints: what a later call can observe."""
    return (store.export_conversation("c"), store.head("c"),
            store.load_checkpoint("c", "conformance.count"),
            store.load_checkpoint("c", SUMMARY.name))


def _broken_definitions() -> list[object]:
    good = counting()
    found: list[object] = [None, {"name": "x"}, "definition"]
    for field, value in (("name", ""), ("name", 3), ("version", 0), ("version", 2.0),
                         ("state_schema", {"type": "nope"}), ("state_schema", []),
                         ("initial_state", {"count": 1}), ("initial_state", float("nan")),
                         ("fold", None), ("kinds", frozenset({("k", 0)})), ("kinds", [])):
        clone = attrs.evolve(good)
        object.__setattr__(clone, field, value)
        found.append(clone)
    return found


@pytest.mark.parametrize("definition", _broken_definitions(), ids=repr)
def test_malformed_definition_refused_store_unchanged(
    store: ProjectionStore, definition: object
) -> None:
    """PRJ-001, PRJ-002: a malformed definition is invalid_input and the store is unchanged."""
    store.append("c", [slot(1), slot(2)])
    store.catch_up("c", SUMMARY, max_events=1)
    before = observable(store)
    with pytest.raises(LedgerError) as caught:
        store.catch_up("c", definition)  # type: ignore[arg-type]
    assert caught.value.kind == "invalid_input"
    assert observable(store) == before


@pytest.mark.parametrize("bound", [0, -3, 1_000_001, True, 1.5, "10", None])
def test_bad_max_events_refused_store_unchanged(store: ProjectionStore, bound: object) -> None:
    """PRJ-011: max_events outside 1..1 000 000 is invalid_input and changes nothing."""
    store.append("c", [slot(1)])
    before = observable(store)
    with pytest.raises(LedgerError) as caught:
        store.catch_up("c", SUMMARY, max_events=bound)  # type: ignore[arg-type]
    assert caught.value.kind == "invalid_input"
    assert observable(store) == before


def test_constructor_refuses_malformed_definitions() -> None:
    """PRJ-001: ProjectionDefinition itself refuses a bad name, version or initial state."""
    for arguments in (("", 1, {}, {}), ("n", 0, {}, {}), ("n", 1, {"type": "array"}, {})):
        with pytest.raises(LedgerError) as caught:
            ProjectionDefinition(*arguments, fold=lambda s, e: s)  # type: ignore[misc]
        assert caught.value.kind == "invalid_input"


class Boom(Exception):
    """The failure a fault probe injects."""


def _probe_at(label: str) -> Callable[[str], None]:
    def probe(seen: str) -> None:
        if seen == label:
            raise Boom(label)

    return probe


def test_sqlite_fault_during_catch_up_leaves_checkpoint(tmp_path: Path) -> None:
    """PRJ-032: a failure after the checkpoint write rolls it back with its transaction."""
    path = tmp_path / "f.sqlite"
    with_fault = SqliteStore(path, fault_probe=_probe_at("checkpoint"))
    with_fault.append("c", [slot(n) for n in range(1, 6)])
    with pytest.raises(Boom):
        with_fault.catch_up("c", SUMMARY)
    assert with_fault.load_checkpoint("c", SUMMARY.name) is None
    with_fault.close()
    clean = SqliteStore(path)
    assert clean.catch_up("c", SUMMARY).upto_seq == 5
    clean.close()


def test_memory_fault_during_catch_up_leaves_checkpoint() -> None:
    """PRJ-032: in memory, a failure before the swap stores nothing."""
    store = MemoryStore(fault_probe=_probe_at("checkpoint"))
    store.append("c", [slot(n) for n in range(1, 4)])
    with pytest.raises(Boom):
        store.catch_up("c", SUMMARY)
    assert store.load_checkpoint("c", SUMMARY.name) is None


def test_two_sqlite_handles_race_catch_ups(tmp_path: Path) -> None:
    """PRJ-013: two handles of one file racing catch-ups never store an older checkpoint."""
    path = tmp_path / "race.sqlite"
    first, second = SqliteStore(path), SqliteStore(path)
    first.append("c", [slot(n) for n in range(1, 41)])
    definition = counting()
    seen: list[int] = []
    stop = threading.Event()

    def catch(handle: SqliteStore, bound: int) -> None:
        for _ in range(12):
            handle.catch_up("c", definition, max_events=bound)

    def watch() -> None:
        reader = SqliteStore(path)
        while not stop.is_set():
            found = reader.load_checkpoint("c", definition.name)
            seen.append(0 if found is None else found.upto_seq)
        reader.close()

    threads = [threading.Thread(target=catch, args=(first, 1)),
               threading.Thread(target=catch, args=(second, 3))]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    watcher.join()
    assert seen == sorted(seen)
    final = first.load_checkpoint("c", definition.name)
    assert final is not None and final.upto_seq == 40
    events = list(first.read("c").items)
    assert canonical.encode(final.state) == expected_state(definition, events, 40, first)
    first.close()
    second.close()


def test_version_bump_equals_fresh_fold(store: ProjectionStore) -> None:
    """PRJ-020: after a bump, the checkpoint equals a fresh store's fold of the same events."""
    store.append("c", [slot(n) for n in range(1, 9)])
    store.catch_up("c", counting(version=1))
    bumped = store.catch_up("c", counting(version=3))
    fresh = MemoryStore()
    fresh.append("c", [slot(n) for n in range(1, 9)])
    assert canonical.encode(bumped.state) == canonical.encode(
        fresh.catch_up("c", counting(version=3)).state
    )


def test_refused_fold_names_the_event(store: ProjectionStore) -> None:
    """PRJ-031: the replay refusal names seq, kind and version; the checkpoint stays."""
    store.append("c", [slot(1)])
    store.append("c", [EventDraft(event_id="x", kind="retry/started", occurred_at=STAMP,
                                  payload={"attempt": 2})])
    only_slots = counting(kinds=frozenset({("state/set", 1)}))
    with pytest.raises(LedgerError) as caught:
        store.catch_up("c", only_slots)
    error = caught.value
    assert (error.kind, error.seq, error.event_kind,
            error.schema_version) == ("replay_refused", 2, "retry/started", 1)
    assert store.load_checkpoint("c", only_slots.name) is None


def test_archive_round_trip_with_custom_definition(store: ProjectionStore, tmp_path: Path) -> None:
    """PRJ-040, PRJ-044: checkpoints export and import byte-identically into the other store."""
    store.append("c", [slot(n, f"s{n % 2}") for n in range(1, 8)])
    store.catch_up("c", STATE_SLOTS)
    store.catch_up("c", counting(), max_events=5)
    data = store.export_conversation("c")
    for target in (MemoryStore(), SqliteStore(tmp_path / "target.sqlite")):
        target.import_conversation(data, projections=[counting()])
        assert target.export_conversation("c") == data
        assert target.projection_status("c", "conformance.count").upto_seq == 5
        target.close()


def test_verify_checks_builtin_checkpoints_only() -> None:
    """PRJ-042: a store-independent reader checks built-in checkpoints and skips custom ones."""
    store = MemoryStore()
    store.append("c", [slot(1), slot(2)])
    store.catch_up("c", SUMMARY)
    store.catch_up("c", counting())
    document = canonical.decode(store.export_conversation("c"))
    assert isinstance(document, dict)
    for item in document["companions"]["projections"]:  # type: ignore[index]
        item["state"] = {"lies": True}
    problems = inspect_archive(canonical.encode(document), default_registry())[1]
    assert [(p.kind, p.requirement) for p in problems] == [("integrity", "PRJ-042")]


def test_fold_changes_in_place_stay_private(store: ProjectionStore) -> None:
    """PRJ-003: a fold that mutates its state cannot reach the stored checkpoint or the schema."""
    held: list[JsonValue] = []

    def fold(state: JsonValue, envelope: Envelope) -> JsonValue:
        assert isinstance(state, dict)
        state["n"] = envelope.seq
        held.append(state)
        return state

    definition = ProjectionDefinition("hold", 1, {"type": "object"}, {}, fold)
    store.append("c", [slot(1), slot(2)])
    store.catch_up("c", definition)
    assert isinstance(held[0], dict)
    held[0]["n"] = 99
    stored = store.load_checkpoint("c", "hold")
    assert stored is not None and stored.state == {"n": 2}
    assert definition.initial_state == {}


BAD_READS: list[tuple[str, Callable[[ProjectionStore], object]]] = [
    ("load_checkpoint name ''", lambda s: s.load_checkpoint("c", "")),
    ("load_checkpoint name 3", lambda s: s.load_checkpoint("c", 3)),  # type: ignore[arg-type]
    ("load_checkpoint conversation ''", lambda s: s.load_checkpoint("", "n")),
    ("projection_status name None", lambda s: s.projection_status("c", None)),  # type: ignore[arg-type]
    ("projection_status long name", lambda s: s.projection_status("c", "n" * 201)),
    ("catch_up conversation 7", lambda s: s.catch_up(7, SUMMARY)),  # type: ignore[arg-type]
    ("import projections not a sequence",
     lambda s: s.import_conversation(_archive_of_other(), projections=SUMMARY)),  # type: ignore[arg-type]
    ("import projections twice",
     lambda s: s.import_conversation(_archive_of_other(), projections=[counting(), counting()])),
    ("import projections not definitions",
     lambda s: s.import_conversation(_archive_of_other(), projections=["x"])),  # type: ignore[list-item]
]


def _archive_of_other() -> bytes:
    other = MemoryStore()
    other.append("other", [slot(1)])
    return other.export_conversation("other")


@pytest.mark.parametrize(("what", "call"), BAD_READS, ids=[w for w, _ in BAD_READS])
def test_bad_projection_calls_refused_store_unchanged(
    store: ProjectionStore, what: str, call: Callable[[ProjectionStore], object]
) -> None:
    """PRJ-001, PRJ-043, ENV-005: every bad argument is invalid_input and changes nothing."""
    store.append("c", [slot(1), slot(2)])
    store.catch_up("c", SUMMARY, max_events=1)
    before = observable(store)
    with pytest.raises(LedgerError) as caught:
        call(store)
    assert caught.value.kind == "invalid_input"
    assert observable(store) == before
    assert store.head("other") == 0
