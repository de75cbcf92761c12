"""The replay gate (spec chapter ``replay.md``, RPL-001 .. RPL-005)."""

from __future__ import annotations

import pytest

from conftest import archive_bytes, draft, wire_event
from convledger.envelope import Envelope, from_wire
from convledger.errors import ReplayRefusedError
from convledger.kinds import default_registry
from convledger.memory import MemoryStore
from convledger.replay import Verdict, admit, replay


def _envelope(seq: int, *, kind: str = "state/set", version: int = 1, ignorable: bool = False
              ) -> Envelope:
    members: dict[str, object] = {"schemaVersion": version}
    if ignorable:
        members["ignorable"] = True
    return from_wire({**wire_event(seq, kind=kind), **members})


@pytest.mark.parametrize(
    ("kind", "version", "ignorable", "verdict"),
    [
        ("state/set", 1, False, Verdict.ACCEPTED),
        ("state/set", 1, True, Verdict.ACCEPTED),
        ("future/kind", 1, True, Verdict.IGNORED),
        ("state/set", 2, True, Verdict.IGNORED),
    ],
)
def test_verdict_table(kind: str, version: int, ignorable: bool, verdict: Verdict) -> None:
    """RPL-001, RPL-002: registered pairs are accepted; unregistered ignorable ones ignored."""
    envelope = _envelope(1, kind=kind, version=version, ignorable=ignorable)
    assert admit(envelope, default_registry()) is verdict


@pytest.mark.parametrize(("kind", "version"), [("future/kind", 1), ("state/set", 2)])
def test_unregistered_not_ignorable_refused_with_identity(kind: str, version: int) -> None:
    """RPL-003: refused with replay_refused naming conversationId, seq, eventId, version, kind."""
    envelope = _envelope(4, kind=kind, version=version)
    with pytest.raises(ReplayRefusedError) as caught:
        admit(envelope, default_registry())
    error = caught.value
    assert error.kind == "replay_refused"
    assert (error.conversation_id, error.seq, error.event_id) == ("conv", 4, "e4")
    assert (error.schema_version, error.event_kind) == (version, kind)


def test_ignored_envelope_keeps_identity_and_position() -> None:
    """RPL-002: the replay yields the ignored envelope itself, position and identity intact."""
    envelope = _envelope(2, kind="future/kind", ignorable=True)
    assert list(replay([envelope], default_registry())) == [(envelope, Verdict.IGNORED)]


def test_replay_stops_at_first_refusal() -> None:
    """RPL-004: nothing after the first refused envelope is yielded."""
    envelopes = [
        _envelope(1),
        _envelope(2, kind="future/kind", ignorable=True),
        _envelope(3, kind="future/kind"),
        _envelope(4),
    ]
    applied: list[int] = []
    with pytest.raises(ReplayRefusedError) as caught:
        for envelope, _verdict in replay(envelopes, default_registry()):
            applied.append(envelope.seq)
    assert applied == [1, 2]
    assert caught.value.seq == 3


def test_bounded_read_keeps_unknown_events() -> None:
    """RPL-005: a bounded read returns unknown ignorable events without dropping them."""
    store = MemoryStore()
    unknown = {**wire_event(2, kind="future/kind"), "ignorable": True}
    store.import_conversation(archive_bytes([wire_event(1), unknown, wire_event(3)]))
    page = store.read("conv")
    assert [envelope.seq for envelope in page.items] == [1, 2, 3]
    assert page.items[1].to_wire() == unknown


def test_import_passes_every_event_through_the_gate() -> None:
    """RPL-005, ARC-012: import refuses an unknown, non-ignorable event with replay_refused."""
    store = MemoryStore()
    store.append("other", [draft("x1")])
    with pytest.raises(ReplayRefusedError):
        store.import_conversation(
            archive_bytes([wire_event(1), wire_event(2, kind="future/kind")])
        )
    assert store.head("conv") == 0
