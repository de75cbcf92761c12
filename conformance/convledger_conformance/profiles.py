"""How hard the conformance checks search: the Hypothesis settings of each profile.

=========  ==============================================  ===========================
profile    what it is for                                  budget
=========  ==============================================  ===========================
smoke      a quick sanity run while writing a store        seconds for the whole suite
ci         every pull request                              well under two minutes on
                                                           the in-memory store
thorough   before a release, or when hunting a bug         as long as it takes
=========  ==============================================  ===========================

Every profile is built on top of Hypothesis' *current default* settings, so a
caller that loads a derandomized default profile (as the runner does for
``--derandomize``) reaches every check without the checks knowing about it.

Choices that hold for every profile, and why:

* ``database=None``: a conformance run must not write a ``.hypothesis``
  directory into the caller's working directory, and a stale example database
  would replay failures of an older store (a lesson of the zarr suites).
* ``deadline=None``: stores do real I/O (fsync, locks, threads); their timing
  varies and is not what these checks judge.
* ``suppress_health_check=[HealthCheck.too_slow]``: the same reason. A store
  over a real database takes milliseconds per operation, which Hypothesis'
  speed heuristics would report as a problem of the test. No other health
  check is suppressed: filtering and data size must stay healthy.
* ``report_multiple_bugs=False``: a check reports the one shrunk failure it
  found, whose :class:`~convledger_conformance.registry.CheckFailure` names
  the broken requirement ids; the runner attributes them precisely.
* ``print_blob=False``: no ``@reproduce_failure`` advice. Its users run the
  checks from the command line, over the wire or through the plugin, not as
  their own test functions, so a decorator is no way for them to repeat a
  failure; a failure ends instead in the command line (``--seed``) or the
  plugin seed (``--convledger-seed``) that repeats it (issue 35).
* ``smoke`` and ``ci`` skip Hypothesis' *explain* phase. It replays a shrunk
  failure hundreds of times to mark which steps matter; on a state machine
  over a store that turns a two-second failure into a minute. ``thorough``
  keeps it.
"""

from __future__ import annotations

from typing import Final

import attrs
from hypothesis import HealthCheck, Phase, settings

PROFILES: Final = ("smoke", "ci", "thorough")
"""The profiles, from fastest to deepest."""


@attrs.frozen
class Budget:
    """The search budget of one profile."""

    max_examples: int
    """Examples per property check and programs per state machine."""
    stateful_step_count: int
    """Steps of one state-machine program."""
    explain: bool = False
    """Whether a failure is explained (Hypothesis' explain phase)."""


BUDGETS: Final = {
    "smoke": Budget(max_examples=4, stateful_step_count=12),
    "ci": Budget(max_examples=100, stateful_step_count=40),
    "thorough": Budget(max_examples=400, stateful_step_count=80, explain=True),
}
"""The budget of each profile, as a table."""


def settings_for(profile: str, *, derandomize: bool = False) -> settings:
    """The Hypothesis settings of ``profile``, built on the current default settings.

    ``derandomize=True`` forces a fixed seed sequence; ``False`` leaves the
    default's choice alone (so a derandomized default profile still applies).
    """
    if profile not in BUDGETS:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    budget = BUDGETS[profile]
    chosen = settings(
        max_examples=budget.max_examples,
        stateful_step_count=budget.stateful_step_count,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        report_multiple_bugs=False,
        print_blob=False,
        # The default's phases, so a default without shrinking (the runner's
        # ``shrink=False``) reaches the checks too.
        phases=[
            phase
            for phase in settings().phases
            if budget.explain or phase is not Phase.explain
        ],
    )
    if derandomize:
        chosen = settings(chosen, derandomize=True)
    return chosen


def scaled(profile: str, *, share: float) -> settings:
    """The settings of ``profile`` with ``max_examples`` scaled by ``share`` (at least 1).

    Heavy checks (many threads, thousands of events) take a share of the
    examples a light property check gets.
    """
    base = settings_for(profile)
    return settings(base, max_examples=max(1, round(base.max_examples * share)))
