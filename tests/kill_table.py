"""The kill table: which check killed a broken store, and after how many examples.

Issue 7 asks that the ci profile kill every broken store and that the run say
which check killed it and after how many examples. :func:`kill` runs the
given checks against a broken store at ``ci``, derandomized (the same examples
every run) and unshrunk (Hypothesis stops at the first failing example, so
what is counted is search, not shrinking), and counts per check:

* ``examples``: the Hypothesis examples that made a store, up to and including
  the first failing one. A factory call inside a Hypothesis example is
  attributed to that example (a check that makes two stores per example, to
  export from one and import into the other, counts one example); Hypothesis'
  final replay of the failing example is not counted; a call outside any
  example (a check without generated data, a store made in a helper thread)
  counts as one example of its own. A state machine makes one store per
  program, so for machines an example is a program.
* ``stores``: the factory calls, the final replay excluded.

This module holds no tests; the ``test_gallery_*`` tests and
``scripts/kill_table.py`` use it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
from hypothesis import control

from convledger.store import LedgerStore
from convledger_conformance.helper_calls import stopped_by
from convledger_conformance.registry import Check, CheckContext, all_checks
from convledger_conformance.report import FAILED, Report
from convledger_conformance.runner import run_suite


@attrs.frozen
class KillRow:
    """One broken store's row: its tagged ids, the checks that failed it, and the cost."""

    store: str
    ids: tuple[str, ...]
    """The requirement ids the broken store is tagged with (its one bug)."""
    killed_by: tuple[str, ...]
    """The checks that failed, in run order."""
    examples_to_kill: int
    """The fewest examples any failing check tried, the failing one included (0: survived)."""
    examples: tuple[tuple[str, int], ...] = ()
    """Per failing check: examples tried up to and including the first failing one."""
    stores: tuple[tuple[str, int], ...] = ()
    """Per failing check: stores the factory made up to the failure."""
    failed: frozenset[str] = frozenset()
    """Every requirement id the run reported failed."""
    profile: str = "ci"
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        """Every tagged id was reported failed."""
        return set(self.ids) <= self.failed

    def line(self) -> str:
        """One line for ``pytest -s``: which check killed the store, after how many examples."""
        if not self.killed_by:
            return f"{self.store} {list(self.ids)}: SURVIVED at {self.profile}"
        counts = ", ".join(f"{name} after {count}" for name, count in self.examples)
        return (
            f"{self.store} {list(self.ids)}: killed at {self.profile} by {counts} "
            f"example(s) ({self.seconds:.1f} s)"
        )


@attrs.define
class CountingFactory:
    """A store factory that counts, per check, examples and stores up to the failure."""

    factory: Callable[[], Any]
    check: str = ""
    stores_made: dict[str, int] = attrs.field(factory=dict)
    examples_seen: dict[str, int] = attrs.field(factory=dict)
    _last_example: object = None

    def __call__(self) -> LedgerStore:
        """Make a store, counting it (and its example, when it starts a new one)."""
        context = control._current_build_context.value
        if context is None or not context.is_final:
            self.stores_made[self.check] = self.stores_made.get(self.check, 0) + 1
            if context is None or context is not self._last_example:
                self.examples_seen[self.check] = self.examples_seen.get(self.check, 0) + 1
            self._last_example = context
        store: LedgerStore = self.factory()
        return store

    @property
    def examples(self) -> int:
        """The examples counted so far (all checks together)."""
        return sum(self.examples_seen.values())

    def counted(self, item: Check) -> Check:
        """``item`` running with this counter attributing calls to it."""

        def run(context: CheckContext) -> None:
            self.check = item.name
            self._last_example = None
            try:
                item.run(context)
            finally:
                self.check = ""

        return attrs.evolve(item, run=run)


def focused(ids: Iterable[str], *, excluded: Callable[[Check], bool] | None = None) -> list[Check]:
    """The registered checks covering one of ``ids``, the state machines excepted by default.

    The machines catch most of these bugs too, but a failing program takes
    seconds to find; the focused checks are what the gallery tests run.
    """
    wanted = set(ids)
    skip = excluded if excluded is not None else (lambda item: "machine" in item.name)
    return [item for item in all_checks() if set(item.ids) & wanted and not skip(item)]


def kill(
    broken: Any,
    checks: Sequence[Check],
    *,
    name: str | None = None,
    factory: Callable[[], Any] | None = None,
    profile: str = "ci",
) -> KillRow:
    """Run ``checks`` against a broken store, derandomized and unshrunk; its kill row.

    ``broken`` has ``.catches`` and either ``.factory`` or ``.store`` (a class
    whose call makes a fresh store); ``factory`` overrides both (an SQLite
    class needs ``factory_of``). The row's ``failed`` holds every failed id.
    """
    return kill_with_report(broken, checks, name=name, factory=factory, profile=profile)[0]


def kill_with_report(
    broken: Any,
    checks: Sequence[Check],
    *,
    name: str | None = None,
    factory: Callable[[], Any] | None = None,
    profile: str = "ci",
) -> tuple[KillRow, Report]:
    """:func:`kill`, also returning the conformance report."""
    made = factory if factory is not None else getattr(broken, "factory", None) or broken.store
    label = name if name is not None else _name_of(broken)
    counter = CountingFactory(made)
    started = time.perf_counter()
    report = run_suite(
        counter,
        profile=profile,
        store_name=label,
        checks=[counter.counted(item) for item in checks],
        derandomize=True,
        shrink=False,
    )
    seconds = time.perf_counter() - started
    killers = tuple(r.name for r in report.checks if r.status == FAILED)
    # a broken helper call's finding (CAP-006) ran no examples itself: the checks it stopped did
    stopped = {r.name: stopped_by(r, report.checks) for r in report.checks
               if stopped_by(r, report.checks)}
    examples = tuple(
        (check, min((counter.examples_seen.get(b, 0) for b in stopped[check]), default=0)
         if check in stopped else counter.examples_seen.get(check, 0))
        for check in killers
    )
    row = KillRow(
        store=label,
        ids=tuple(broken.catches),
        killed_by=killers,
        examples_to_kill=min((count for _, count in examples), default=0),
        examples=examples,
        stores=tuple((check, counter.stores_made.get(check, 0)) for check in killers),
        failed=frozenset(r.id for r in report.requirements if r.status == FAILED),
        profile=profile,
        seconds=seconds,
    )
    return row, report


def render_table(rows: Iterable[KillRow]) -> str:
    """The kill table in markdown: store, requirement ids, killing check(s), examples to kill."""
    lines = [
        "| store | requirement | killed by (examples to kill) | examples to kill | killed |",
        "|---|---|---|---:|---|",
    ]
    for row in rows:
        killers = "<br>".join(f"`{name}` ({count})" for name, count in row.examples) or "—"
        lines.append(
            f"| {row.store} | {', '.join(row.ids)} | {killers} | "
            f"{row.examples_to_kill if row.killed_by else '—'} | "
            f"{'yes' if row.killed else 'NO'} |"
        )
    return "\n".join(lines)


def _name_of(broken: Any) -> str:
    named = getattr(broken, "name", None)
    if isinstance(named, str):
        return named
    store = getattr(broken, "store", None)
    return str(getattr(store, "__name__", repr(broken)))


__all__ = [
    "CountingFactory",
    "KillRow",
    "focused",
    "kill",
    "kill_with_report",
    "render_table",
]
