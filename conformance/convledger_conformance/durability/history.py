"""Concurrent histories checked against the ledger model (DUR-010 .. DUR-013).

Theory of operation
-------------------
Every call of a concurrent run is a :class:`Call`: its conversation, what it
asked (``append`` with its eventIds and ``expectedHead``, ``read``, ``head``),
when it was invoked and when it completed (one monotonic clock for every
client) and what it answered. :func:`check_history` partitions the history by
conversation (no operation spans two, so the ledger model's histories compose)
and searches each part as Wing & Gong do: repeatedly pick a call that no
other pending call completed before, apply it to the model, and keep it only
if the model gives the answer the call got; the search memoizes the
(linearized calls, model ledger) pairs it has refuted (Lowe's refinement, as
Knossos does) and stops after ``bound`` model steps, when the part is reported
``too_long`` rather than passed (DUR-013).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

DEFAULT_BOUND = 200_000
"""Model steps per conversation before the search gives up (DUR-013)."""


@attrs.frozen
class Call:
    """One completed call of a concurrent history."""

    client: int
    conversation: str
    op: str
    """``append``, ``read`` or ``head``."""
    invoked: float
    completed: float
    event_ids: tuple[str, ...] = ()
    expected: int | None = None
    outcome: str = "ok"
    """``ok`` or the refusal kind (``conflict``, ...)."""
    value: Any = None
    """``append``: the seqs placed, ``conflict``: the actual head, ``read``: the eventIds read,
    ``head``: the head."""


@attrs.frozen
class Verdict:
    """The verdict on one conversation's part of a history."""

    conversation: str
    calls: int
    status: str
    """``linearizable``, ``not_linearizable`` or ``too_long``."""
    steps: int
    detail: str = ""


def _apply(call: Call, ledger: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    """Whether the model answers ``call`` as it was answered on ``ledger``, and the next ledger."""
    head = len(ledger)
    if call.op == "head":
        return call.outcome == "ok" and call.value == head, ledger
    if call.op == "read":
        return call.outcome == "ok" and tuple(call.value) == ledger, ledger
    if call.expected is not None and call.expected != head:
        return call.outcome == "conflict" and call.value == head, ledger
    if call.outcome != "ok":
        return False, ledger
    placed = tuple(range(head + 1, head + 1 + len(call.event_ids)))
    return tuple(call.value) == placed, ledger + call.event_ids


def linearize(calls: Sequence[Call], bound: int = DEFAULT_BOUND) -> tuple[str, int, str]:
    """Wing & Gong's search over one conversation's calls; (status, steps, detail)."""
    ordered = sorted(calls, key=lambda call: call.invoked)
    count = len(ordered)
    full = (1 << count) - 1
    refuted: set[tuple[int, tuple[str, ...]]] = set()
    steps = 0
    deepest = 0
    # An explicit stack of (linearized mask, model ledger, next candidate index).
    stack: list[tuple[int, tuple[str, ...], int]] = [(0, (), 0)]
    while stack:
        mask, ledger, start = stack.pop()
        if mask == full:
            return "linearizable", steps, ""
        deepest = max(deepest, bin(mask).count("1"))
        pending = [i for i in range(count) if not mask >> i & 1]
        horizon = min(ordered[i].completed for i in pending)
        advanced = False
        for position in range(start, len(pending)):
            index = pending[position]
            call = ordered[index]
            if call.invoked > horizon:
                break
            steps += 1
            if steps > bound:
                return "too_long", steps, f"more than {bound} model steps"
            fits, following = _apply(call, ledger)
            key = (mask | 1 << index, following)
            if not fits or key in refuted:
                continue
            stack.append((mask, ledger, position + 1))
            stack.append((key[0], following, 0))
            advanced = True
            break
        if not advanced:
            refuted.add((mask, ledger))
    return "not_linearizable", steps, (
        f"no order of the {count} calls fits the ledger model (at most {deepest} linearized)"
    )


def check_history(calls: Sequence[Call], bound: int = DEFAULT_BOUND) -> list[Verdict]:
    """One verdict per conversation of ``calls`` (DUR-010, DUR-013)."""
    parts: dict[str, list[Call]] = {}
    for call in calls:
        parts.setdefault(call.conversation, []).append(call)
    verdicts = []
    for conversation, part in sorted(parts.items()):
        status, steps, detail = linearize(part, bound)
        verdicts.append(Verdict(conversation, len(part), status, steps, detail))
    return verdicts
