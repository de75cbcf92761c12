"""The findings of broken helper calls (CAP-006): one per call, naming the checks it stopped.

The suite's helpers (``ledger.model.read_whole``, ``state_digest``) raise
:class:`~convledger_conformance.registry.HelperBroken` when the store breaks one of
their calls; the runner reports each check so stopped ``not_run`` with
``blocked_by`` set, and :func:`helper_findings` turns them into one failed result
per broken call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from convledger.store import Capability
from convledger_conformance.registry import HelperBroken
from convledger_conformance.report import FAILED, CheckResult

HELPER_CHECK: Final = "helper"
"""Prefix of the finding of a helper call the store broke
(``helper: read with limit 1000 is refused (invalid_input)``, CAP-006)."""

def blocking_helper(leaves: Sequence[BaseException]) -> HelperBroken | None:
    """The broken helper call behind a check's failure (its ``leaves``) when nothing else failed."""
    first = leaves[0] if leaves else None
    if isinstance(first, HelperBroken) and all(isinstance(leaf, HelperBroken) for leaf in leaves):
        return first
    return None


def stopped_by(finding: CheckResult, results: Iterable[CheckResult]) -> tuple[str, ...]:
    """The checks the broken helper call of ``finding`` stopped (empty for any other result)."""
    return tuple(r.name for r in results if r.blocked_by and
                 finding.name == f"{HELPER_CHECK}: {r.blocked_by}")


def helper_findings(results: Iterable[CheckResult]) -> list[CheckResult]:
    """CAP-006: one failed finding per helper call the store broke, naming the checks it stopped.

    A store that refuses the suite's whole-ledger read (or its head) would otherwise fail
    every check that reads to compare states; each such check is reported ``not_run``
    (``blocked_by``) and the broken call is reported here once, failing the ids it relies on.
    Messages and details are built from the stopped checks' own, which the runner escaped.
    """
    stopped: dict[str, list[CheckResult]] = {}
    for result in results:
        if result.blocked_by:
            stopped.setdefault(result.blocked_by, []).append(result)
    findings = []
    for outcome, blocked in stopped.items():
        ids = tuple(dict.fromkeys(i for result in blocked for i in result.blocked_ids))
        affected = sorted({i for result in blocked for i in result.ids})
        names = [result.name for result in blocked]
        message = (f"{outcome}: {len(blocked)} checks could not run; their ids: "
                   f"{', '.join(affected)} ({blocked[0].message})")
        detail = (f"The suite's own call (made to compare states, not the call a check tests) "
                  f"failed in the checks {', '.join(names)}.\n"
                  f"First of them, {names[0]}: {blocked[0].message}\n{blocked[0].detail}")
        findings.append(CheckResult(
            name=f"{HELPER_CHECK}: {outcome}", ids=ids, capability=Capability.LEDGER,
            status=FAILED, failed_ids=ids, message=message,
            detail=detail,
        ))
    return findings
