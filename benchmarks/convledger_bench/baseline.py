"""Save a run as a baseline, compare a run with it, judge each figure (issue 34).

A baseline is one JSON file (``FORMAT``) in a folder (``.convledger-bench/``
by default): the workload, the machine, and per figure its ratio to its floor
with the run's 95 % interval (:mod:`convledger_bench.ratios`).

**Change.** A figure's change is how much more the store costs relative to
its floor than at the baseline: ``baseline ratio / ratio - 1`` (+25 %: the
store takes 1.25 times as long as it did, next to the same floor). A
threshold ``append.single:25%`` bounds that change.

**Verdict** of a gated figure, from the intervals of this run's ratio and
the baseline's (``low`` .. ``high``): the change lies between ``baseline.low /
now.high - 1`` and ``baseline.high / now.low - 1``, so the runs' own spread
decides whether they can judge:

=================  =================================================================
``ok``             even the slowest reading of the intervals is within the threshold
``REGRESSION``     even the fastest reading is beyond it
``inconclusive``   the interval straddles the threshold: this run cannot tell
``missing``        the baseline has the figure and this run does not (or the reverse
                   for a figure ``--fail-on`` names)
=================  =================================================================

:data:`EXIT_REGRESSION` wins over :data:`EXIT_INCONCLUSIVE`; a run without
either exits 0. A figure no threshold names is printed, never judged.
"""

from __future__ import annotations

import datetime
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import attrs

from convledger_bench.hotpaths import FLOORS, HotPathRun, Workload
from convledger_bench.ratios import RatioEstimate

FORMAT: Final = "convledger-bench-baseline"
FORMAT_VERSION: Final = 1
DEFAULT_DIRECTORY: Final = Path(".convledger-bench")
EXIT_REGRESSION: Final = 1
EXIT_INCONCLUSIVE: Final = 6
BUDGETS_RESOURCE: Final = "gate_budgets.toml"
"""The thresholds shipped in the wheel (``--budgets default``)."""

OK, REGRESSION, INCONCLUSIVE, MISSING, NOT_GATED = (
    "ok", "REGRESSION", "inconclusive", "missing", "not gated")


class BaselineError(ValueError):
    """A baseline that cannot be read, or does not fit this run (another workload)."""


def baseline_path(name: str, directory: Path = DEFAULT_DIRECTORY) -> Path:
    """``NAME`` in ``directory`` as ``NAME.json``; a name with a slash or ``.json`` is a path."""
    if "/" in name or name.endswith(".json"):
        return Path(name)
    return directory / f"{name}.json"


def run_document(run: HotPathRun, *, store: str, machine: Mapping[str, str]) -> dict[str, Any]:
    """The baseline document of a run."""
    return {
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "saved": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "store": store,
        "workload": run.workload.as_json(),
        "machine": dict(machine),
        "floors": dict(FLOORS),
        "figures": {item.id: item.as_json() for item in run.figures},
        "skipped": dict(run.skipped),
    }


def save(document: dict[str, Any], path: Path) -> None:
    """Write a baseline (its folder created when absent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", "utf-8")


def load(path: Path) -> dict[str, Any]:
    """A baseline document; :class:`BaselineError` when it is not one."""
    try:
        document = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise BaselineError(f"cannot read the baseline {path}: {error}") from None
    if not isinstance(document, dict) or (document.get("format"), document.get(
            "formatVersion")) != (FORMAT, FORMAT_VERSION):
        raise BaselineError(f"{path} is not a {FORMAT} {FORMAT_VERSION} file")
    return document


def check_workload(document: Mapping[str, Any], workload: Workload) -> None:
    """A baseline is compared only with a run of its own workload."""
    if document.get("workload") != workload.as_json():
        raise BaselineError(f"the baseline was measured on workload {document.get('workload')}, "
                            f"this run on {workload.as_json()}: not comparable")


_THRESHOLD = re.compile(r"^\s*([A-Za-z_.*]+)\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")


def parse_thresholds(text: str) -> dict[str, float]:
    """``'append.single:25%,read:15%'`` as {pattern: 0.25, ...}; ``ValueError`` when malformed.

    A pattern is a figure id, a prefix of ids (``append`` covers ``append.single`` and
    ``append.batch``) or ``*`` (every figure).
    """
    thresholds: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        found = _THRESHOLD.match(part)
        if found is None:
            raise ValueError(f"--fail-on: {part.strip()!r} is not FIGURE:N% "
                             f"(e.g. append.single:25%)")
        thresholds[found.group(1)] = float(found.group(2)) / 100
    if not thresholds:
        raise ValueError("--fail-on names no figure")
    return thresholds


def load_budgets(source: str) -> dict[str, float]:
    """The thresholds of a budgets file (``default``: the one shipped with the package).

    The file is TOML with one table ``[thresholds]`` mapping patterns to ``"N%"``.
    """
    if source == "default":
        text = resources.files("convledger_bench").joinpath(BUDGETS_RESOURCE).read_text("utf-8")
    else:
        try:
            text = Path(source).read_text("utf-8")
        except OSError as error:
            raise ValueError(f"--budgets: cannot read {source}: {error}") from None
    try:
        table = tomllib.loads(text).get("thresholds")
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"--budgets: {source} is not TOML: {error}") from None
    if not isinstance(table, dict) or not table:
        raise ValueError(f"--budgets: {source} has no [thresholds] table")
    return parse_thresholds(",".join(f"{name}:{value}" for name, value in table.items()))


def threshold_of(figure_id: str, thresholds: Mapping[str, float]) -> tuple[str, float] | None:
    """The most specific pattern that covers ``figure_id``, and its threshold."""
    best: tuple[str, float] | None = None
    for pattern, value in thresholds.items():
        covers = pattern in ("*", figure_id) or figure_id.startswith(pattern + ".")
        if covers and (best is None or best[0] == "*" or len(pattern) > len(best[0])):
            best = (pattern, value)
    return best


@attrs.frozen
class Comparison:
    """One figure beside its baseline, and its verdict."""

    figure: str
    floor: str
    baseline: RatioEstimate | None
    now: RatioEstimate | None
    threshold: float | None
    verdict: str
    note: str = ""

    @property
    def change(self) -> float | None:
        """Cost relative to the floor against the baseline's (+0.25: 25 % slower)."""
        if self.baseline is None or self.now is None:
            return None
        return self.baseline.ratio / self.now.ratio - 1

    @property
    def change_range(self) -> tuple[float, float] | None:
        """The change at the fast and the slow end of the two intervals (see :func:`judge`)."""
        if self.baseline is None or self.now is None:
            return None
        return change_range(self.baseline, self.now)

    def as_json(self) -> dict[str, Any]:
        """The comparison as plain JSON."""
        return {
            "figure": self.figure, "floor": self.floor, "verdict": self.verdict,
            "threshold": self.threshold, "change": self.change,
            "changeRange": None if self.change_range is None else list(self.change_range),
            "baseline": None if self.baseline is None else self.baseline.as_json(),
            "now": None if self.now is None else self.now.as_json(), "note": self.note,
        }


def change_range(baseline: RatioEstimate, now: RatioEstimate) -> tuple[float, float]:
    """The least and the most change the two intervals allow.

    Both runs carry their own interval: a baseline saved on a noisy runner is no
    more exact than the run compared with it, so its interval counts too.
    """
    return baseline.low / now.high - 1, baseline.high / now.low - 1


def judge(baseline: RatioEstimate, now: RatioEstimate, threshold: float) -> str:
    """``ok``, ``REGRESSION`` or ``inconclusive`` (see the module docstring)."""
    fastest, slowest = change_range(baseline, now)
    if fastest > threshold:
        return REGRESSION
    if slowest <= threshold:
        return OK
    return INCONCLUSIVE


def compare(
    document: Mapping[str, Any], run: HotPathRun, thresholds: Mapping[str, float], *,
    named: bool = True,
) -> list[Comparison]:
    """Every figure of the run or the baseline, beside the other, judged by ``thresholds``.

    ``named`` (``--fail-on``): a pattern that matches no figure of the run or the baseline is
    a figure of its own, ``missing``. A budgets file (``named=False``) judges only the figures
    there are.
    """
    saved: dict[str, Any] = dict(document.get("figures", {}))
    measured = {item.id: item for item in run.figures}
    names = [item.id for item in run.figures] + [name for name in saved if name not in measured]
    for pattern in thresholds if named else ():
        if pattern != "*" and not any(
                name == pattern or name.startswith(pattern + ".") for name in names):
            names.append(pattern)
    results: list[Comparison] = []
    for name in names:
        found = threshold_of(name, thresholds)
        limit = None if found is None else found[1]
        item = measured.get(name)
        old = saved.get(name)
        before = None if old is None else RatioEstimate.from_json(old)
        now = None if item is None else item.estimate
        floor = item.floor if item is not None else str((old or {}).get("floor", "-"))
        if old is not None and item is not None and old.get("floor") != item.floor:
            results.append(Comparison(name, floor, before, now, limit, MISSING if limit else
                                      NOT_GATED, f"floor changed from {old.get('floor')}"))
            continue
        if before is None or now is None:
            why = run.skipped.get(name, "not in this run") if now is None else "not in the baseline"
            asked = named and found is not None and found[0] != "*"
            gated = limit is not None and (before is not None or asked)
            results.append(Comparison(name, floor, before, now, limit,
                                      MISSING if gated else NOT_GATED, why))
            continue
        verdict = NOT_GATED if limit is None else judge(before, now, limit)
        results.append(Comparison(name, floor, before, now, limit, verdict))
    return results


def exit_status(results: Sequence[Comparison]) -> int:
    """1 on a regression or a missing gated figure, else 6 when one is inconclusive, else 0."""
    verdicts = {result.verdict for result in results}
    if verdicts & {REGRESSION, MISSING}:
        return EXIT_REGRESSION
    if INCONCLUSIVE in verdicts:
        return EXIT_INCONCLUSIVE
    return 0


def comparison_table(results: Sequence[Comparison]) -> str:
    """One line per figure: baseline, now, change (with this run's range), threshold, verdict."""
    header = ("figure", "floor", "baseline", "now (95% range)", "change (range)",
              "threshold", "verdict")
    rows = [header]
    for result in results:
        base = "-" if result.baseline is None else f"{result.baseline.ratio:.3f}"
        now = "-" if result.now is None else (
            f"{result.now.ratio:.3f} ({result.now.low:.3f}..{result.now.high:.3f})")
        changed = "-"
        if result.change is not None and result.change_range is not None:
            low, high = result.change_range
            changed = f"{result.change:+.1%} ({low:+.0%}..{high:+.0%})"
        limit = "-" if result.threshold is None else f"{result.threshold:.0%}"
        verdict = result.verdict + (f": {result.note}" if result.note else "")
        rows.append((result.figure, result.floor, base, now, changed, limit, verdict))
    return _aligned(rows)


def run_table(run: HotPathRun) -> str:
    """One line per figure: store and floor medians, ratio with its range, spread, floor."""
    rows: list[tuple[str, ...]] = [("figure", "store us q1", "floor us q1", "ratio (95% range)",
                                    "spread", "floor")]
    for item in run.figures:
        found = item.estimate
        rows.append((item.id, f"{item.store_median * 1e6:,.0f}", f"{item.floor_median * 1e6:,.0f}",
                     f"{found.ratio:.3f} ({found.low:.3f}..{found.high:.3f})",
                     f"{found.spread:.0%}", item.floor))
    rows.extend((name, "-", "-", "-", "-", f"not measured: {why}")
                for name, why in run.skipped.items())
    return _aligned(rows)


def _aligned(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                     .rstrip() for row in rows)
