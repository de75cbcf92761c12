"""The second process of the SQLite machine (SQL-047): one process, many plans, bounded failures.

The process is started once per run and reused; each plan opens the file with a
new store. A child that cannot open the file or whose append fails makes the
check fail with SQL-047 and the child's standard error; a plan left without
its answer (a failed step) makes the next plan start a fresh child.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from convledger.sqlite import SqliteStore
from convledger_conformance import support
from convledger_conformance.registry import CheckFailure
from convledger_conformance.sqlite.machine_process import OtherProcess

STORE = f"{SqliteStore.__module__}:{SqliteStore.__qualname__}"


def draft(event_id: str, kind: str | None = None) -> dict[str, object]:
    """A valid draft (or one of another kind), as the plan carries it."""
    valid = support.draft(event_id, 1)
    return attrs.asdict(valid if kind is None else attrs.evolve(valid, kind=kind))


@pytest.fixture
def other() -> Iterator[OtherProcess]:
    process = OtherProcess()
    yield process
    process.close()


def plan(path: Path, *drafts: dict[str, object], store: str = STORE) -> dict[str, object]:
    return {"store": store, "path": str(path), "conversation": "c", "drafts": list(drafts)}


def test_one_process_serves_many_plans(other: OtherProcess, tmp_path: Path) -> None:
    """Three plans on two files, one child: each append lands at the head it finds."""
    SqliteStore(tmp_path / "a.sqlite").close()
    SqliteStore(tmp_path / "b.sqlite").close()
    seqs = []
    for path, event_id in (("a", "e1"), ("b", "e2"), ("a", "e3")):
        other.open(plan(tmp_path / f"{path}.sqlite", draft(event_id)))
        other.go()
        (wire,) = other.answer()
        assert isinstance(wire, dict)
        seqs.append((wire["eventId"], wire["seq"]))
    assert seqs == [("e1", 1), ("e2", 1), ("e3", 2)]
    store = SqliteStore(tmp_path / "a.sqlite")
    try:
        assert [e.event_id for e in store.read("c").items] == ["e1", "e3"]
    finally:
        store.close()


def test_a_child_that_cannot_open_fails_sql_047(other: OtherProcess, tmp_path: Path) -> None:
    with pytest.raises(CheckFailure) as failure:
        other.open(plan(tmp_path / "a.sqlite", store="convledger.sqlite:NoSuchStore"))
    assert failure.value.ids == ("SQL-047",)
    assert "could not open the file" in str(failure.value)
    assert "NoSuchStore" in str(failure.value)  # the child's standard error


def test_a_refused_child_append_fails_sql_047(other: OtherProcess, tmp_path: Path) -> None:
    other.open(plan(tmp_path / "a.sqlite", draft("e1", kind="")))
    other.go()
    with pytest.raises(CheckFailure) as failure:
        other.answer()
    assert failure.value.ids == ("SQL-047",)
    assert "InvalidInputError" in str(failure.value)  # the child's standard error


def test_a_plan_left_unanswered_starts_a_fresh_child(
    other: OtherProcess, tmp_path: Path
) -> None:
    """A step that failed between open and answer leaves the child waiting for go.

    The next plan ends that child, which appends nothing, and starts another.
    """
    other.open(plan(tmp_path / "a.sqlite", draft("e1")))
    other.open(plan(tmp_path / "a.sqlite", draft("e2")))
    other.go()
    (wire,) = other.answer()
    assert isinstance(wire, dict) and (wire["eventId"], wire["seq"]) == ("e2", 1)
