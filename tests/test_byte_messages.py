"""An export or archive mismatch names the first differing byte offset and both sides (issue 20)."""

from __future__ import annotations

import pytest

from convledger.memory import MemoryStore
from convledger_conformance.registry import CheckFailure
from convledger_conformance.support import archive, draft, expect_same_bytes, wires


def test_a_mismatch_shows_the_offset_and_both_sides() -> None:
    """One changed byte deep inside a real archive: its offset and the bytes around it."""
    store = MemoryStore()
    store.append("c", [draft("e-1", 1), draft("e-2", 2)])
    exported = store.export_conversation("c")
    expected = archive("c", wires("c", [draft("e-1", 1), draft("e-2", 3)]))
    offset = next(n for n, (a, b) in enumerate(zip(expected, exported, strict=False)) if a != b)
    with pytest.raises(CheckFailure) as caught:
        expect_same_bytes("ARC-001", "export of c", expected=expected, got=exported)
    message = caught.value.message
    assert caught.value.ids == ("ARC-001",)
    assert f"byte offset {offset} " in message
    assert repr(expected[offset - 40 : offset + 40]) in message
    assert repr(exported[offset - 40 : offset + 40]) in message


def test_equal_bytes_pass_and_a_prefix_is_a_difference() -> None:
    """Equal bytes pass; a longer export differs at the end of the shorter."""
    expect_same_bytes("ARC-001", "same", expected=b"abc", got=b"abc")
    with pytest.raises(CheckFailure, match=r"byte offset 3 \(expected 3 bytes, got 4"):
        expect_same_bytes("ARC-001", "longer", expected=b"abc", got=b"abcd")
