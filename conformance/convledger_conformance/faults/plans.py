"""The suite side of the fault seam (FLT-001, FLT-002): the protocol and the plans.

A store opts in by offering ``inject(plan)`` (:class:`FaultInjectable`); the
store asks the plan before each of its write points
(:class:`convledger.faults.WritePoint`) and raises the plan's fault there.
:class:`CountingPlan` fails nothing and records the points, so that a first
run of an operation enumerates them; :class:`FailingPlan` fails the ``n``-th
point of a run with one fault and lets every other point through, so that a
sweep can fail each point once.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from convledger.faults import Fault, FaultPlan, WritePoint

FAULTS: tuple[Fault, ...] = (Fault.IO_ERROR, Fault.DISK_FULL, Fault.BUSY)
"""The faults a sweep injects: point ``n`` fails with ``FAULTS[n % 3]``, or with each
under the ``thorough`` profile (:func:`rounds`)."""


def rounds(points: int, profile: str) -> list[tuple[int, Fault]]:
    """The (point, fault) pairs of a sweep of an operation with ``points`` write points."""
    if profile == "thorough":
        return [(n, fault) for n in range(1, points + 1) for fault in FAULTS]
    return [(n, FAULTS[n % len(FAULTS)]) for n in range(1, points + 1)]

KINDS: dict[Fault, str] = {
    Fault.IO_ERROR: "unavailable",
    Fault.DISK_FULL: "unavailable",
    Fault.BUSY: "conflict",
}
"""FLT-003: the kind of the refusal of each fault."""


@runtime_checkable
class FaultInjectable(Protocol):
    """FLT-001: a store that follows a fault plan from now on (None ends the plan)."""

    def inject(self, plan: FaultPlan | None) -> None: ...


class CountingPlan:
    """Fails nothing; ``points`` lists every write point the store asked about."""

    def __init__(self) -> None:
        self.points: list[WritePoint] = []

    def at(self, point: WritePoint) -> Fault | None:
        self.points.append(point)
        return None


class FailingPlan:
    """Fails the ``n``-th write point (1-based) with ``fault``, once; records them all."""

    def __init__(self, n: int, fault: Fault) -> None:
        self.n = n
        self.fault = fault
        self.points: list[WritePoint] = []
        self.failed: WritePoint | None = None

    def at(self, point: WritePoint) -> Fault | None:
        self.points.append(point)
        if len(self.points) == self.n:
            self.failed = point
            return self.fault
        return None
