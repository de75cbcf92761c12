"""The pairs of consecutive transitions come from the rules and cover every type (issue 37)."""

from __future__ import annotations

from convledger.runtime.transitions import TRANSITION_TYPES
from convledger_conformance.runtime.checks_pairs import STEPS, pair_paths, uncovered_types


def test_every_transition_type_has_a_step_kind() -> None:
    assert uncovered_types() == []
    assert {kind for kind, _ in STEPS.values()} == set(TRANSITION_TYPES)


def test_the_pairs_the_issue_names_are_reached_and_each_path_ends_with_its_pair() -> None:
    found = pair_paths()
    for pair in (("recover requeue", "accept"), ("terminal absorbing", "accept"),
                 ("recover abandon", "accept"), ("compact", "accept"),
                 ("interrupt queued", "acquire"), ("recover requeue", "acquire")):
        assert pair in found, pair
    for pair, path in found.items():
        assert path[-2:] == pair
    every_kind = {name for pair in found for name in pair}
    assert every_kind == set(STEPS)


def test_a_pair_the_rules_refuse_is_not_drawn() -> None:
    """Only one run is owned at a time (TRN-031): nothing fenced follows an abandon."""
    found = pair_paths()
    assert ("recover abandon", "terminal") not in found
    assert ("terminal", "checkpoint") not in found
