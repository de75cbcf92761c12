"""The first difference between two observed states, named (issue 37).

A check that compares what a store holds before and after a call (a state
digest, ERR-004, FLT-004, LIM-011) or with what it must hold says where the
two first differ, not only that they do: the conversation and part (head,
event, export, snapshot, checkpoint), the index or member, and both values.
A pair ``(label, value)`` whose labels agree is entered by its label; canonical
JSON bytes are decoded and compared member by member; attrs values by field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from convledger import canonical


def _decoded(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        try:
            return canonical.decode(bytes(value))
        except Exception:  # not canonical JSON (spill bytes, a bundle): compared as bytes
            return value
    return value


def _shown(value: object) -> str:
    return f"{value!r:.200}"


def _labelled(expected: object, got: object) -> bool:
    """Whether both are ``(label, value)`` pairs with the same label."""
    return (isinstance(expected, tuple) and isinstance(got, tuple)
            and len(expected) == 2 == len(got)
            and isinstance(expected[0], str) and expected[0] == got[0])


def first_difference(expected: object, got: object, where: str = "") -> str | None:
    """Where ``expected`` and ``got`` first differ, with both values there; None when equal."""
    if expected == got:
        return None
    here = where or "the whole"
    expected, got = _decoded(expected), _decoded(got)
    if attrs.has(type(expected)) and type(expected) is type(got):
        # by field, not recursing: each value is entered in turn
        names = [field.name for field in attrs.fields(type(expected))]  # type: ignore[arg-type]
        expected = {name: getattr(expected, name) for name in names}
        got = {name: getattr(got, name) for name in names}
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        for key in sorted(set(expected) | set(got), key=str):
            if key not in got:
                return f"{where}.{key}: expected {_shown(expected[key])}, got no such member"
            if key not in expected:
                return f"{where}.{key}: expected no such member, got {_shown(got[key])}"
            found = first_difference(expected[key], got[key], f"{where}.{key}")
            if found is not None:
                return found
    elif (isinstance(expected, Sequence) and isinstance(got, Sequence)
          and not isinstance(expected, str | bytes) and not isinstance(got, str | bytes)):
        if _labelled(expected, got):
            return first_difference(expected[1], got[1], f"{where} {expected[0]}".strip())
        for index, (want, have) in enumerate(zip(expected, got, strict=False)):
            # a labelled part is named by its label, not by its place
            inner = where if _labelled(want, have) else f"{where}[{index}]"
            found = first_difference(want, have, inner)
            if found is not None:
                return found
        if len(expected) != len(got):
            extra = (f"first extra {_shown(got[len(expected)])}" if len(got) > len(expected)
                     else f"first missing {_shown(expected[len(got)])}")
            return f"{here}: expected {len(expected)} items, got {len(got)} ({extra})"
    if isinstance(expected, str) and isinstance(got, str) and max(len(expected), len(got)) > 200:
        at = next((i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
                  min(len(expected), len(got)))
        start = max(0, at - 60)
        return (f"{here}, at character {at}: expected ...{expected[start:at + 100]!r}..., "
                f"got ...{got[start:at + 100]!r}...")
    return f"{here}: expected {_shown(expected)}, got {_shown(got)}"
