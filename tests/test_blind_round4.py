"""Issue 37, blind round 4: every broken store of the round is killed, by the check named here.

``tests/galleries/blind_round4.py`` (with ``blind_round4_sqlite.py`` and
``blind_round4_extra.py``) holds forty broken stores written without reading
the suite and committed before they were run; the module's docstring has the
table of the measured runs (the whole suite at ``smoke`` and, for the
survivors, at ``ci``, before and after the checks written for their blind
spots). Here each store runs the one check listed for it, in process, at the
profile listed (``smoke`` for all but one, whose check needs 1,001
recoverable runs and runs them at ``ci`` only), derandomized and unshrunk, and
that check must fail. The stores the round found surviving smoke are in
:data:`FORMER_SURVIVORS`; they run by default, the others only with
``pytest -m slow`` (each freshness store needs a second process).
"""

from __future__ import annotations

import importlib

import pytest

from convledger_conformance.registry import all_checks
from convledger_conformance.runner import run_suite
from galleries.blind_round4 import all_stores

KILLS: dict[str, tuple[str, str]] = {
    # module:factory under tests/galleries: (the check that kills it, profile)
    "blind_round4:coalesce_into_requeued_run": ("transitions_in_every_order", "smoke"),
    "blind_round4:place_again_on_reacquire": ("transitions_in_every_order", "smoke"),
    "blind_round4:interrupt_requeued_keeps_answer": ("transitions_in_every_order", "smoke"),
    "blind_round4:recover_only_running": ("transitions_in_every_order", "smoke"),
    "blind_round4:interrupt_revives_superseded": ("transitions_in_every_order", "smoke"),
    "blind_round4:reacquire_keeps_fencing_token": ("transitions_in_every_order", "smoke"),
    "blind_round4:duplicate_accept_follows_absorption": ("idempotency_keys_answer_forever",
                                                         "smoke"),
    "blind_round4:recover_revision_zero_skips_check": ("transitions_in_every_order", "smoke"),
    "blind_round4:compact_over_requeued_run": ("transitions_in_every_order", "smoke"),
    "blind_round4:transition_event_id_per_conversation": ("transition_event_id_stored_elsewhere",
                                                          "smoke"),
    "blind_round4:provider_body_once_per_conversation": ("claimed_hashes_are_data", "smoke"),
    "blind_round4:provider_body_table_by_hash": ("claimed_hashes_are_data", "smoke"),
    "blind_round4:bundle_checks_size_only": ("bundle_imports_checked", "smoke"),
    "blind_round4:import_trusts_checkpoint_state": ("checkpoint_imports_checked", "smoke"),
    "blind_round4:spill_live_set_from_events": ("appended_spill_events_are_claims", "smoke"),
    "blind_round4:refused_import_reserves_event_ids": ("refused_import_frees_its_event_ids",
                                                       "smoke"),
    "blind_round4:status_head_of_last_catch_up": ("status_right_after_append", "smoke"),
    "blind_round4:import_id_limit_off_by_one": ("archived_position_members", "smoke"),
    "blind_round4:projection_name_in_utf16_units": ("characters_are_code_points", "smoke"),
    "blind_round4:scan_limit_clamped_in_hook": ("scan_recoverable_pages_in_code_point_order",
                                                "ci"),
    "blind_round4:skipped_events_do_not_count": ("skipped_events_count_toward_max_events",
                                                 "smoke"),
    "blind_round4_extra:look_ahead_ignores_to_seq": ("read_windows", "smoke"),
    "blind_round4_extra:import_report_counts_non_ignorable": ("import_answer", "smoke"),
    "blind_round4_extra:recover_any_unfinished_run": ("transitions_in_every_order", "smoke"),
    "blind_round4_extra:checkpoint_refused_after_interrupt_request": (
        "transitions_in_every_order", "smoke"),
    "blind_round4_extra:scan_cursor_inclusive": ("scan_recoverable_pages_in_code_point_order",
                                                 "smoke"),
    "blind_round4_sqlite:load_run_cache": ("every_read_fresh_across_handles", "smoke"),
    "blind_round4_sqlite:checkpoint_cache_keyed_by_head": ("every_read_fresh_across_handles",
                                                           "smoke"),
    "blind_round4_sqlite:export_cache_keyed_by_head": ("every_read_fresh_across_handles",
                                                       "smoke"),
    "blind_round4_sqlite:negative_runtime_cache": ("every_read_fresh_across_handles", "smoke"),
    "blind_round4_sqlite:spill_negative_cache": ("every_read_fresh_across_handles", "smoke"),
    "blind_round4_sqlite:spill_cache_forgets_purge": ("every_read_fresh_across_handles",
                                                      "smoke"),
    "blind_round4_sqlite:search_cache_without_callback": ("every_read_fresh_across_handles",
                                                          "smoke"),
    "blind_round4_sqlite:projection_status_cache": ("every_read_fresh_across_handles", "smoke"),
    "blind_round4_sqlite:fact_rows_cache_by_total_changes": ("every_read_fresh_across_handles",
                                                             "smoke"),
    "blind_round4_sqlite:process_wide_active_runs_cache": ("every_read_fresh_across_processes",
                                                           "smoke"),
    "blind_round4_sqlite:head_cache_invalidated_by_append_only": (
        "every_read_fresh_across_handles", "smoke"),
    "blind_round4_sqlite:scan_recoverable_cache": ("every_read_fresh_across_handles", "smoke"),
    "blind_round4_sqlite:search_query_in_bytes": ("boundaries_search", "smoke"),
    "blind_round4_sqlite:read_without_seq_clamp": ("hostile_corpus", "smoke"),
}

FORMER_SURVIVORS: frozenset[str] = frozenset({
    "blind_round4:interrupt_revives_superseded",
    "blind_round4:recover_revision_zero_skips_check",
    "blind_round4:compact_over_requeued_run",
    "blind_round4_extra:recover_any_unfinished_run",
    "blind_round4:spill_live_set_from_events",
    "blind_round4:scan_limit_clamped_in_hook",
    "blind_round4_sqlite:search_query_in_bytes",
    "blind_round4_sqlite:export_cache_keyed_by_head",
    "blind_round4_sqlite:spill_cache_forgets_purge",
})
"""Stores the suite did not kill at smoke (or, the last two, killed for another reason than
their bug) before the checks of blind round 4; they run by default."""


def _params() -> list[object]:
    return [
        pytest.param(name, marks=() if name in FORMER_SURVIVORS else (pytest.mark.slow,))
        for name in sorted(KILLS)
    ]


def test_every_store_of_the_round_has_its_killing_check() -> None:
    assert sorted(KILLS) == sorted(name for name, _ in all_stores())
    assert set(KILLS) >= FORMER_SURVIVORS
    names = {item.name for item in all_checks()}
    assert {check for check, _ in KILLS.values()} <= names


@pytest.mark.parametrize("name", _params())
def test_the_check_kills_the_store(name: str) -> None:
    check, profile = KILLS[name]
    module, factory = name.split(":")
    make = getattr(importlib.import_module(f"galleries.{module}"), factory)
    chosen = [item for item in all_checks() if item.name == check]
    report = run_suite(make, profile=profile, checks=chosen, derandomize=True, shrink=False)
    statuses = {result.name: result.status for result in report.checks}
    assert statuses[check] == "failed", statuses
