"""The children fate table of ADR 0175 (FCT-021, FCT-022), as data."""

from __future__ import annotations

STOP_CHILDREN = frozenset({"interrupted", "cancelled", "timeout", "shutdown"})
"""Parent terminal reasons that stop the conversation's children (FCT-021)."""

LEAVE_CHILDREN = frozenset({
    "success", "policy_stop", "provider_stop",
    "superseded", "absorbed",
    "provider_failure", "runtime_failure", "storage_conflict", "output_rejected",
    "context_overflow", "abandoned",
})
"""Parent terminal reasons that leave the children running (FCT-022).

``abandoned`` is not in the ADR's table: recovery abandons a run whose owner is
gone, which is a failure of the run, not a stop of the conversation's work.
"""

LIVE_CHILD_STATES = frozenset({"spawned", "running"})
"""Child states a stop applies to."""


def children_fate(reason: str) -> str | None:
    """``"stop"`` for the reasons of FCT-021, None (leave them) for every other."""
    return "stop" if reason in STOP_CHILDREN else None
