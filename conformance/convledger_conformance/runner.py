"""Running the conformance checks against one store factory.

Theory of operation
-------------------
:func:`run_suite` makes one store only to read its declared capabilities
(CAP-001: taken as given, never detected) and closes it. A declaration that is
not a set of :class:`~convledger.store.Capability`, or that lacks ``ledger``
(CAP-003), fails the pseudo-check :data:`DECLARATION_CHECK` and no other check
runs. Then the check :data:`FRESH_CHECK` runs, first and alone (CAP-005): when
the factory's stores are not new and empty, no other check runs either (each
would fail on the leftover data). Otherwise every check of a declared capability runs with a
:class:`~convledger_conformance.registry.CheckContext`; the checks of
undeclared capabilities are reported ``not_run`` and their requirements become
``not_applicable`` only when the CAP-002 refusal checks passed (see
:mod:`convledger_conformance.report`).

A check fails in one of two ways:

* it raises :class:`~convledger_conformance.registry.CheckFailure`, which
  fails the ids it names (a group of them, as Hypothesis raises for distinct
  bugs, fails the union; naming an id the check does not cover fails them all);
* it raises anything else (an unexpected error of the store, a Hypothesis
  ``Flaky`` or ``Unsatisfiable``): every id of the check fails.

Either way the detail keeps the traceback with Hypothesis' notes (the
falsifying example, shrunk unless ``shrink=False``) and whatever Hypothesis
reported while the check ran, so a failure can be reproduced from the report
alone.

Seeds: unless ``derandomize``, each check runs with its own seed,
:func:`check_seed` of the run's seed and the check's name, so one check is
repeated alone (``-k NAME --seed N``) with the examples it had in the whole
run. A run without a seed draws one; the report carries it.

This module does not import pytest (the plugin is a thin layer over it).
"""

from __future__ import annotations

import functools
import secrets
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Final, TextIO

from hypothesis.reporting import with_reporter

import convledger
from convledger.store import Capability
from convledger_conformance.check_failures import failed_result, leaves_of, printable
from convledger_conformance.helper_calls import blocking_helper, helper_findings
from convledger_conformance.parallel import refuse_other_threads, run_in_processes
from convledger_conformance.profiles import PROFILES
from convledger_conformance.registry import (
    Check,
    CheckContext,
    CheckFailure,
    StoreFactory,
    all_checks,
    load_checks,
)
from convledger_conformance.report import (
    FAILED,
    FILE_CAPABILITIES,
    NOT_RUN,
    PASSED,
    CheckResult,
    Report,
    SuiteInfo,
    requirement_results,
)
from convledger_conformance.rerun import ordered
from convledger_conformance.runsettings import (
    SEED_BITS,
    ProgressLine,
    hypothesis_defaults,
    seeded,
)
from convledger_conformance.support import NOT_FRESH
from convledger_conformance.trace_recording import Recording, with_recorded_trace
from convledger_conformance.vectors.files import INVENTORY_CHECK, unconsumed
from convledger_conformance.wire_stopped import one_line_text, server_stopped

DECLARATION_CHECK: Final = "capability_declaration"
"""The name under which the runner reports its own check of the declaration."""
DECLARATION_IDS: Final = ("CAP-001", "CAP-003")
FRESH_CHECK: Final = "fresh_store"
"""The check that runs first and alone; the run stops when it fails (CAP-005)."""


def run_suite(
    factory: StoreFactory,
    *,
    profile: str = "ci",
    store_name: str | None = None,
    checks: Iterable[Check] | None = None,
    derandomize: bool = False,
    shrink: bool = True,
    progress: TextIO | None = None,
    record_failures: Path | None = None,
    seed: int | None = None,
    stop_at_first: bool = False,
    failed_first: Sequence[str] = (),
    focused: bool = False,
    jobs: int = 1,
) -> Report:
    """Run every check of a declared capability against stores made by ``factory``.

    ``checks`` defaults to every registered check; ``progress`` is a stream
    (usually ``sys.stderr``) for a live progress line; ``store_name`` names the
    store in the report (by default the factory's qualified name).
    ``derandomize`` runs the same examples every time; ``shrink=False`` reports
    failures as found, without minimizing them (much faster on a broken store).
    A run of the whole suite (``checks`` None) also reports the pseudo-check
    :func:`vector_inventory`. ``record_failures`` is a folder: each failed
    check is run once more with its calls recorded, and its shrunk failure is
    written there as a minimal trace vector
    (:mod:`convledger_conformance.vectors.failures`); the check's detail names
    the file, or says why none was written. ``seed`` derives every check's
    seed (:func:`check_seed`); None draws one, unless ``derandomize``.
    ``stop_at_first`` stops at the first failed check (``-x``): the checks not
    reached are ``not_run``, saying so. ``failed_first`` names checks to run before
    the others (``--ff``). ``focused`` (a user's selection: ``-k``, ``--chapter``,
    ``--lf``) lists the ids no check of ``checks`` covers as not selected (CAP-007)
    instead of ``not_run``. ``jobs`` above 1 runs the checks after ``fresh_store`` in
    that many forked processes (:mod:`convledger_conformance.parallel`; the factory
    must survive a fork), reported in the same order.
    """
    selected = _validated(factory, profile, checks)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an int >= 1, got {jobs!r}")
    if jobs > 1:
        refuse_other_threads()
    if jobs > 1 and getattr(factory, "fork_safe", True) is False:
        raise ValueError(f"jobs must be 1 for {describe_factory(factory)}: it says it does not "
                         "survive a fork (fork_safe = False)")
    if seed is None and not derandomize:
        seed = secrets.randbelow(2**SEED_BITS)
    name = store_name if store_name is not None else describe_factory(factory)
    suite = _suite_info(profile=profile, derandomize=derandomize, shrink=shrink, seed=seed)
    line = ProgressLine(progress)
    rest = ordered([item for item in selected if item.name != FRESH_CHECK], failed_first)
    # the declaration, fresh_store, the other checks and, for the whole suite, the inventory
    total = 2 + len(rest) + (checks is None)
    line.show(1, total, DECLARATION_CHECK)
    started = time.perf_counter()
    try:
        declared = read_declaration(factory)
    except Exception as error:
        line.close()
        refused = failed_result(DECLARATION_CHECK, DECLARATION_IDS, error, started)
        reason = f"not run: the capability declaration failed ({DECLARATION_CHECK})"
        results = [refused, *(_not_run(item, reason) for item in selected)]
        return _report(suite, name, frozenset(), results, focused=focused)
    accepted = CheckResult(
        name=DECLARATION_CHECK,
        ids=DECLARATION_IDS,
        capability=Capability.LEDGER,
        status=PASSED,
        duration=time.perf_counter() - started,
    )
    context = CheckContext(factory=factory, profile=profile, capabilities=declared)
    fresh = next(item for item in all_checks() if item.name == FRESH_CHECK)
    with hypothesis_defaults(derandomize=derandomize, shrink=shrink):
        line.show(2, total, FRESH_CHECK)
        first = seeded(run_check, fresh, context, seed)
        if first.status == FAILED and first.message.startswith(NOT_FRESH):
            line.close()
            reason = f"not run: the factory's stores are not new and empty ({FRESH_CHECK})"
            results = [accepted, first, *(_not_run(item, reason) for item in rest)]
            return _report(suite, name, declared, results, focused=focused)
        recording = None if record_failures is None else Recording(record_failures, name)
        if jobs > 1:
            ran = list(_run_in_processes(rest, context, line, total=total, seed=seed,
                                         recording=recording, stop_at_first=stop_at_first,
                                         jobs=jobs))
        else:
            ran = list(_run_checks(rest, context, line, total=total, seed=seed,
                                   recording=recording, stop_at_first=stop_at_first))
        results = [accepted, first, *ran, *helper_findings([first, *ran])]
    if checks is None:  # the whole suite: every shipped vector file must have been replayed
        line.show(total, total, INVENTORY_CHECK)
        results.append(vector_inventory())
    line.close()
    return _report(suite, name, declared, results, focused=focused)


def vector_inventory(folder: Path | None = None) -> CheckResult:
    """The pseudo-check that every shipped vector file has a check that replays it.

    Fails (no requirement id of its own, but the run is not ``ok``) when a file
    under the package's ``vectors/`` folder, or ``folder``, is consumed by no
    registered check (:mod:`convledger_conformance.vectors.files`).
    """
    load_checks()  # the check modules register the vector files they consume
    started = time.perf_counter()
    missing = unconsumed(folder)
    return CheckResult(
        name=INVENTORY_CHECK,
        ids=(),
        capability=Capability.LEDGER,
        status=FAILED if missing else PASSED,
        duration=time.perf_counter() - started,
        message=f"vector files no check replays: {', '.join(missing)}" if missing else "",
    )


def read_declaration(factory: StoreFactory) -> frozenset[Capability]:
    """CAP-001, CAP-003: the capabilities a fresh store declares, taken as given."""
    store = factory()
    try:
        declared: object = store.capabilities
    finally:
        store.close()
    if not isinstance(declared, (set, frozenset)) or not all(
        isinstance(item, Capability) for item in declared
    ):
        raise CheckFailure(
            ("CAP-001",), f"capabilities must be a set of Capability, got {declared!r}"
        )
    if Capability.LEDGER not in declared:
        raise CheckFailure(("CAP-003",), "the store does not declare capability 'ledger'")
    return frozenset(declared)


def context_for(item: Check, factory: StoreFactory, *, profile: str) -> CheckContext | None:
    """The context to run one check in, or None when its capability is not declared.

    Raises :class:`CheckFailure` for a declaration CAP-001 or CAP-003 refuses;
    used by the unittest base class and the pytest plugin, which run one
    check per test.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    declared = read_declaration(factory)
    if item.missing(declared):
        return None
    return CheckContext(factory=factory, profile=profile, capabilities=declared)


def run_check(item: Check, context: CheckContext) -> CheckResult:
    """Run one check, keeping what Hypothesis reports; never raises for a failing check."""
    reported: list[str] = []
    started = time.perf_counter()
    try:
        with with_reporter(lambda value: reported.append(str(value))):
            item.run(context)
    except Exception as error:
        helper = blocking_helper(leaves_of(error))
        if helper is not None:
            return CheckResult(
                name=item.name, ids=item.ids, capability=item.capability, status=NOT_RUN,
                duration=time.perf_counter() - started, also=item.also,
                message=printable(f"not run: the suite's helper call {helper.outcome}: "
                                   f"{helper.error!r}"),
                detail=printable("".join(traceback.format_exception(error))),
                blocked_by=helper.outcome, blocked_ids=helper.ids,
            )
        return failed_result(item.name, item.ids, error, started, reported=reported)
    return CheckResult(
        name=item.name,
        ids=item.ids,
        capability=item.capability,
        status=PASSED,
        duration=time.perf_counter() - started,
        also=item.also,
    )


def describe_factory(factory: StoreFactory) -> str:
    """``module:qualname`` of a factory, or its repr when it has no name."""
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}:{qualname}"
    return repr(factory)


def _run_checks(
    selected: list[Check], context: CheckContext, line: ProgressLine,
    *, total: int, seed: int | None, recording: Recording | None = None,
    stop_at_first: bool = False,
) -> Iterator[CheckResult]:
    """Run the checks of declared capabilities; the others are not run (CAP-001).

    Once a wire server stops answering (a timeout, an exit), the checks after the one
    it died in are ``not_run`` with that reason, not failed one by one on a dead
    connection.
    """
    stopped = ""
    dead: str | None = None
    for number, item in enumerate(selected, start=3):  # after the declaration and fresh_store
        if stopped:
            yield _not_run(item, f"not run: stopped at the first failed check, {stopped} (-x)")
            continue
        line.show(number, total, item.name)
        missing = item.missing(context.capabilities)
        if dead is not None and not missing:  # an undeclared capability's reason stands (CAP-004)
            yield _not_run(item, dead)
            continue
        if not missing:
            result = seeded(run_check, item, context, seed)
            if result.status == FAILED and recording is not None:
                recorded = functools.partial(with_recorded_trace, result, recording=recording)
                result = seeded(recorded, item, context, seed)
            if result.status == FAILED and stop_at_first:
                stopped = item.name
            yield result
            gone = server_stopped(context.factory)
            if gone is not None:
                dead = printable(f"not run: the server stopped answering in check {item.name} "
                                 f"({one_line_text(gone)})")
        else:
            names = ", ".join(repr(capability.value) for capability in missing)
            reason = f"capability {names} is not declared"
            if set(missing) & FILE_CAPABILITIES:
                reason += " (judged in process only: never declared over the wire, WIR-021)"
            yield _not_run(item, reason)


def _run_in_processes(
    selected: list[Check], context: CheckContext, line: ProgressLine,
    *, total: int, seed: int | None, recording: Recording | None, stop_at_first: bool,
    jobs: int,
) -> Iterator[CheckResult]:
    """:func:`_run_checks` of each check in one of ``jobs`` forked processes, in order."""
    stopped: list[str] = []

    def one(item: Check) -> CheckResult:
        (result,) = _run_checks([item], context, ProgressLine(None), total=total, seed=seed,
                                recording=recording)
        return result

    def stop(result: CheckResult) -> bool:
        if stop_at_first and result.status == FAILED:
            stopped.append(result.name)
        return bool(stopped)

    def not_run(item: Check) -> CheckResult:
        return _not_run(item, f"not run: stopped at the first failed check, {stopped[0]} (-x)")

    yield from run_in_processes(
        selected, one, jobs=jobs, stop=stop, not_run=not_run,
        on_done=lambda number, result: line.show(2 + number, total, f"{result.name} done"),
    )


def _validated(
    factory: StoreFactory, profile: str, checks: Iterable[Check] | None
) -> list[Check]:
    if not callable(factory):
        raise TypeError(f"factory must be a callable returning a fresh store, got {factory!r}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    selected = list(all_checks() if checks is None else checks)
    for item in selected:
        if not isinstance(item, Check):
            raise TypeError(f"checks must be Check objects, got {item!r}")
    return selected


def _not_run(item: Check, reason: str) -> CheckResult:
    return CheckResult(
        name=item.name, ids=item.ids, capability=item.capability, status=NOT_RUN,
        message=reason, also=item.also,
    )


def _suite_info(
    *, profile: str, derandomize: bool, shrink: bool, seed: int | None
) -> SuiteInfo:
    # Imported here, not at the top, so that importing the package does not
    # import the module ``python -m convledger_conformance.requirements`` runs.
    from convledger_conformance.requirements import SPEC_VERSION

    return SuiteInfo(
        version=convledger.__version__,
        spec_version=SPEC_VERSION,
        profile=profile,
        derandomize=derandomize,
        shrink=shrink,
        seed=seed,
    )


def _report(
    suite: SuiteInfo,
    store: str,
    declared: frozenset[Capability],
    results: list[CheckResult],
    *,
    focused: bool = False,
) -> Report:
    """The report of ``results``; a ``focused`` run (a selection of checks) lists the ids
    none of its checks covers as not selected (CAP-007), apart from the statuses."""
    from convledger_conformance.requirements import load_index

    requirements = requirement_results(load_index(), results, declared)
    not_selected: tuple[str, ...] = ()
    if focused:
        covered = {requirement for result in results for requirement in result.ids}
        not_selected = tuple(row.id for row in requirements if row.id not in covered)
        requirements = tuple(row for row in requirements if row.id in covered)
    return Report(
        suite=suite,
        store=store,
        capabilities=declared,
        requirements=requirements,
        checks=tuple(results),
        not_selected=not_selected,
    )


