"""The kind registry (spec chapter ``kinds.md``, KND-001 .. KND-004).

The equality of ``spec/schemas/kinds.json`` and the package copy, and the
validity of every payload schema, are tested in ``test_schemas.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from conftest import archive_bytes, draft, memory_state, state_set, wire_event
from convledger.errors import InvalidInputError
from convledger.kinds import KindRegistry, KindSpec, default_registry
from convledger.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[1]


def _listed_pairs() -> set[tuple[str, int]]:
    document = json.loads((ROOT / "spec" / "schemas" / "kinds.json").read_text("utf-8"))
    return {(entry["kind"], entry["schemaVersion"]) for entry in document["kinds"]}


def test_registry_is_exactly_the_listed_pairs() -> None:
    """KND-001: the default registry holds exactly the pairs of kinds.json."""
    assert set(default_registry().specs) == _listed_pairs()


def test_registry_knows_each_listed_pair_only() -> None:
    """KND-001: a listed pair is known; the same kind at another version is not."""
    registry = default_registry()
    for kind, version in _listed_pairs():
        assert registry.knows(kind, version)
        assert not registry.knows(kind, version + 1)
    assert not registry.knows("future/kind", 1)


def test_pair_registered_twice_is_a_programming_error() -> None:
    """KND-001: one schema per (kind, schemaVersion) pair."""
    spec = KindSpec(kind="a/b", schema_version=1, chapter="x", summary="", payload_schema={})
    with pytest.raises(ValueError):
        KindRegistry.of([spec, spec])


def test_custom_registry_validates_with_its_schema() -> None:
    """KND-003: a registry applies the payload schema of the pair."""
    registry = KindRegistry.of(
        [
            KindSpec(
                kind="note/added",
                schema_version=1,
                chapter="test",
                summary="",
                payload_schema={"type": "object", "required": ["text"]},
            )
        ]
    )
    registry.check_payload("note/added", 1, {"text": "hi"})
    with pytest.raises(InvalidInputError) as caught:
        registry.check_payload("note/added", 1, {})
    assert caught.value.requirement == "KND-003"


@pytest.mark.parametrize("ignorable", [False, True])
@pytest.mark.parametrize(("kind", "version"), [("future/kind", 1), ("state/set", 2)])
def test_append_of_unregistered_pair_refused(kind: str, version: int, ignorable: bool) -> None:
    """KND-002: an unregistered (kind, schemaVersion) is refused, ignorable or not."""
    store = MemoryStore()
    before = memory_state(store)
    with pytest.raises(InvalidInputError) as caught:
        store.append("conv", [draft("e1", kind=kind, schema_version=version, ignorable=ignorable)])
    assert caught.value.requirement == "KND-002"
    assert memory_state(store) == before


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"actor": "a", "name": "n", "value": 1},
        {"actor": "", "name": "n", "value": 1, "version": 1},
        {"actor": "a", "name": "n", "value": 1, "version": 0},
        {"actor": "a", "name": "n", "value": 1, "version": 1.5},
        {"actor": "a", "name": "n", "value": 1, "version": True},
        {**state_set(1), "extra": 1},
        [],
        None,
    ],
    ids=repr,
)
def test_append_of_payload_the_schema_rejects_refused(payload: object) -> None:
    """KND-003: a draft whose payload its kind's schema rejects is refused, storing nothing."""
    store = MemoryStore()
    store.append("conv", [draft("e0")])
    before = memory_state(store)
    with pytest.raises(InvalidInputError) as caught:
        store.append("conv", [draft("e1"), attrs.evolve(draft("e2"), payload=payload)])
    assert caught.value.requirement == "KND-003"
    assert memory_state(store) == before


def test_import_of_payload_the_schema_rejects_refused() -> None:
    """KND-003: an imported registered event whose payload breaks its schema is refused."""
    store = MemoryStore()
    data = archive_bytes([wire_event(1), wire_event(2, payload={"actor": "a"})])
    with pytest.raises(InvalidInputError) as caught:
        store.import_conversation(data)
    assert caught.value.requirement == "KND-003"
    assert memory_state(store) == ({}, [])


def test_imported_unregistered_ignorable_kept_exactly() -> None:
    """KND-004: an unregistered ignorable event is stored as received; its payload is not read."""
    odd = wire_event(
        2, kind="future/kind", schemaVersion=7, ignorable=True, payload=[{"z": -0.5}, None, "😀"]
    )
    data = archive_bytes([wire_event(1), odd])
    store = MemoryStore()
    store.import_conversation(data)
    assert store.export_conversation("conv") == data
    assert store.read("conv", from_seq=2).items[0].to_wire() == odd
