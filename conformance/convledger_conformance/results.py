"""What the checks came to: check results and one status per requirement (CAP-004).

Theory of operation
-------------------
The runner produces one :class:`CheckResult` per check. A requirement's status
is then a pure function of the results of the checks that cover it, given by
:func:`requirement_status` and written out here as a table so that a reader
can check it against CAP-004 at a glance:

==================  ============================================================
status              when
==================  ============================================================
``failed``          some covering check failed on this id
``passed``          otherwise, some covering check ran and passed
``not_applicable``  every covering check belongs to a capability the store
                    declared absent, and the CAP-002 refusal of absent
                    capabilities was itself checked and passed
``not_run``         anything else, including ids no check covers
==================  ============================================================

A check that failed on some of its ids does not vouch for its other ids: for
them it counts as not run. ``not_run`` never counts as passed, and every
active id of the index appears exactly once.

The report of a run (:mod:`convledger_conformance.report`) gathers these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from convledger.store import Capability

if TYPE_CHECKING:
    from convledger_conformance.requirements import Requirement

SUITE_NAME: Final = "convledger-conformance"

PASSED: Final = "passed"
FAILED: Final = "failed"
NOT_APPLICABLE: Final = "not_applicable"
NOT_RUN: Final = "not_run"

CHECK_STATUSES: Final = (PASSED, FAILED, NOT_RUN)
"""What one check can come to."""
REQUIREMENT_STATUSES: Final = (PASSED, FAILED, NOT_APPLICABLE, NOT_RUN)
"""CAP-004: the only statuses a requirement can have, in summary order."""

ABSENCE_REQUIREMENT: Final = "CAP-002"
"""The requirement whose checks prove that undeclared capabilities are refused."""


@attrs.frozen
class SuiteInfo:
    """Which suite produced a report, and how it was run."""

    version: str
    spec_version: str
    profile: str
    derandomize: bool
    shrink: bool = True
    seed: int | None = None
    """The run's seed (each check's is derived from it); None when derandomized."""
    rerun: str = ""
    """The command line that repeats this run (:meth:`Report.reproduce` adds ``-k``)."""
    name: str = SUITE_NAME

    def to_dict(self) -> dict[str, object]:
        """The ``suite`` member of the JSON report."""
        return {
            "name": self.name,
            "version": self.version,
            "specVersion": self.spec_version,
            "profile": self.profile,
            "derandomize": self.derandomize,
            "shrink": self.shrink,
            "seed": self.seed,
        }


@attrs.frozen
class CheckResult:
    """What one check came to.

    ``failed_ids`` is the subset of ``ids`` the check proved broken (all of
    them when it failed with something other than a ``CheckFailure``);
    ``detail`` holds the traceback and Hypothesis' reproduction for a failure,
    or the reason a check did not run. ``message`` is the one-line summary of
    either.
    """

    name: str
    ids: tuple[str, ...]
    capability: Capability
    status: str
    duration: float = 0.0
    failed_ids: tuple[str, ...] = ()
    message: str = ""
    detail: str = ""
    also: tuple[Capability, ...] = ()
    """Further capabilities the check needs (see ``registry.check``)."""
    blocked_by: str = ""
    blocked_ids: tuple[str, ...] = ()
    """On a ``not_run`` check: the helper call the store broke, the ids it needs (CAP-006)."""
    divergence: str = ""
    """On a failure recorded as a trace: its first diverging operation, described."""
    signature: str = ""
    """The diverging operation and what differed (failures sharing it share a root cause)."""
    trace_size: tuple[int, int] | None = None
    """Steps and bytes of the failure's trace (the smallest reproduction is the simplest)."""
    trace: str = ""
    """The trace vector file of this failure (possibly one written for an earlier check)."""

    def needs(self) -> frozenset[Capability]:
        """Every capability the check needs."""
        return frozenset((self.capability, *self.also))

    def to_dict(self) -> dict[str, object]:
        """One entry of the ``checks`` member of the JSON report."""
        return {
            "name": self.name,
            "ids": list(self.ids),
            "capability": self.capability.value,
            "status": self.status,
            "durationSeconds": round(self.duration, 6),
            "failedIds": list(self.failed_ids),
            "message": self.message,
            "detail": self.detail,
            **({"blockedBy": self.blocked_by} if self.blocked_by else {}),
            **({"firstDivergence": self.divergence} if self.divergence else {}),
            **({"trace": self.trace} if self.trace else {}),
        }


@attrs.frozen
class RequirementResult:
    """The status of one requirement and the checks that cover it."""

    id: str
    status: str
    chapter: str
    level: str
    checks: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """One entry of the ``requirements`` member of the JSON report."""
        return {
            "id": self.id,
            "status": self.status,
            "chapter": self.chapter,
            "level": self.level,
            "checks": list(self.checks),
        }


def requirement_status(
    requirement_id: str,
    covering: Sequence[CheckResult],
    declared: frozenset[Capability],
    *,
    absence_checked: bool,
) -> str:
    """CAP-004: the one status of ``requirement_id`` given the checks that cover it."""
    if any(requirement_id in result.failed_ids for result in covering):
        return FAILED
    if any(result.status == PASSED for result in covering):
        return PASSED
    if (
        covering
        and absence_checked
        and all(not result.needs() <= declared for result in covering)
    ):
        return NOT_APPLICABLE
    return NOT_RUN


def requirement_results(
    index: Iterable[Requirement],
    checks: Sequence[CheckResult],
    declared: frozenset[Capability],
) -> tuple[RequirementResult, ...]:
    """The status of every active conformance requirement of ``index``, in index order (CAP-004)."""
    # Reference-only chapters (PGS) bind one reference store; no report lists them.
    active = [
        requirement for requirement in index
        if not requirement.retired and not requirement.reference_only
    ]
    covering: dict[str, list[CheckResult]] = {requirement.id: [] for requirement in active}
    for result in checks:
        for requirement_id in result.ids:
            covering.setdefault(requirement_id, []).append(result)
    absence = requirement_status(ABSENCE_REQUIREMENT, covering.get(ABSENCE_REQUIREMENT, []),
                                 declared, absence_checked=False)
    return tuple(
        RequirementResult(
            id=requirement.id,
            status=requirement_status(requirement.id, covering[requirement.id], declared,
                                      absence_checked=absence == PASSED),
            chapter=requirement.chapter,
            level=requirement.level,
            checks=tuple(result.name for result in covering[requirement.id]),
        )
        for requirement in active
    )
