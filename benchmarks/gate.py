"""The performance gate: measured ratios against ``benchmarks/budgets.toml`` (issue 8).

    python benchmarks/gate.py [--quick] [--json PATH] [--save PATH] [--sizes 1000,100000]
    python benchmarks/gate.py --spread RUN1.json RUN2.json RUN3.json

Without ``--json`` the gate runs ``benchmarks/bench_sqlite.py`` and
``benchmarks/bench_postgres.py`` under pytest (``--bench-quick`` with
``--quick``) and reads their ``--benchmark-json``; with ``--json`` it reads a
run made earlier. When a run breaches a budget, the gate runs ALL the
benchmarks once more (the whole run, not only the breached figures) and judges
each figure by the better of the two runs, so a figure fails only when it is
below its budget in both runs: a loaded machine alone does not fail it (a
regression fails both runs). The figures of
budgets with ``requires = "postgres"`` are not gated when no PostgreSQL server
was reachable, unless ``CI=true``, where their absence is a breach.

Each figure's ratio (store against
the raw-SQLite floor of the same run, or a large ledger against a small one)
is in the benchmark's ``extra_info``; so are its ratios against the other
contenders of the same run (``against``: the minimal ledger transaction and
the peers), which the gate judges as figures ``"{id} vs {name}"``. A
contender the figure could not measure (``not_measured``: the ``peers``
extra not installed) is reported with its reason and never fails the gate;
nor does a ``full_only = true`` budget under ``--quick`` (the 1e6 scale).
The gate prints one table (figure, measured, budget, target, verdict) and
exits 1 when a figure is below its budget, or is missing when its budget
requires it.

Budgets of ``kind = "rate"`` (events/s) are absolute and so depend on the
machine: they are reported always and gated only without ``--quick`` (see
``budgets.toml``). ``--spread`` prints, per figure, the lowest, median and
highest value over several runs: the run-to-run noise a budget must clear.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUDGETS = HERE / "budgets.toml"
SIZES = "1000,100000"


def run_benchmarks(*, quick: bool, sizes: str, output: Path) -> None:
    """Run ``bench_sqlite.py`` and ``bench_postgres.py`` under pytest, JSON to ``output``."""
    command = [
        sys.executable, "-m", "pytest", str(HERE / "bench_sqlite.py"),
        str(HERE / "bench_postgres.py"), "-q",
        "-p", "no:cacheprovider", f"--bench-sizes={sizes}", f"--benchmark-json={output}",
        "--benchmark-columns=median,iqr,rounds",
    ]
    if quick:
        command.append("--bench-quick")
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=HERE.parent, check=False)
    print(f"benchmarks ran in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if completed.returncode != 0:
        raise SystemExit(f"the benchmarks failed (pytest exit {completed.returncode})")


def figures_of(path: Path) -> dict[str, dict[str, Any]]:
    """Every figure's ``extra_info`` in a pytest-benchmark JSON, by figure id.

    A figure's other contenders of the same run (``against``: the minimal
    transaction, the peers) become figures of their own, ``"{id} vs {name}"``,
    whose ratio is the contender's median over the store's; a contender the
    figure names in ``not_measured`` becomes such a figure with no ratio and
    the reason (``unmeasurable``), so its budget is reported, not breached.
    """
    document = json.loads(path.read_text(encoding="utf-8"))
    found: dict[str, dict[str, Any]] = {}
    for entry in document.get("benchmarks", []):
        info = entry.get("extra_info", {})
        if "figure" not in info:
            continue
        name = str(info["figure"])
        found[name] = info
        for other, measured in (info.get("against") or {}).items():
            found[f"{name} vs {other}"] = {
                "figure": f"{name} vs {other}", "ratio": measured["ratio"],
                "store_median": info["store_median"], "floor_median": measured["median"],
                "store_spread": info["store_spread"], "floor_spread": measured["spread"],
            }
        for other, reason in (info.get("not_measured") or {}).items():
            found[f"{name} vs {other}"] = {"figure": f"{name} vs {other}", "ratio": None,
                                           "unmeasurable": reason}
    return found


def value_of(budget: dict[str, Any], info: dict[str, Any]) -> float | None:
    """The measured value a budget compares: the ratio, or the rate in events/s."""
    value = info.get("rate" if budget["kind"] == "rate" else "ratio")
    return None if value is None else float(value)


def judge(
    budgets: list[dict[str, Any]], figures: dict[str, dict[str, Any]], *, quick: bool
) -> tuple[list[tuple[str, ...]], bool]:
    """Table rows (figure, measured, budget, target, spread, verdict) and whether all passed."""
    rows: list[tuple[str, ...]] = []
    passed = True
    for budget in budgets:
        figure = str(budget["figure"])
        gated = not (quick and budget["kind"] == "rate")
        unit = " /s" if budget["kind"] == "rate" else "x"
        minimum = float(budget["minimum"])
        target = float(budget.get("target", minimum))
        info = figures.get(figure)
        measured = None if info is None else value_of(budget, info)
        if measured is None and budget.get("requires") == "postgres" and not _in_ci():
            budget = {**budget, "unmeasurable": "no PostgreSQL server (CONVLEDGER_PG_DSN)"}
        if measured is None and info is not None and info.get("unmeasurable"):
            budget = {**budget, "unmeasurable": str(info["unmeasurable"])}
        if measured is None and quick and budget.get("full_only"):
            budget = {**budget, "unmeasurable": "measured by the full gate only"}
        if measured is None:
            reason = str(budget.get("unmeasurable", "figure missing from the run"))
            verdict = "not measured: " + reason
            if gated and not budget.get("unmeasurable"):
                passed = False
                verdict = "BREACH: " + reason
            rows.append((figure, "-", _fmt(minimum, unit), _target(budget, unit), "-", verdict))
            continue
        noise = (f"{info['store_spread']:.0%}/{info['floor_spread']:.0%}"
                 if info and "store_spread" in info else "-")
        if measured < minimum and gated:
            verdict = "BREACH"
            passed = False
        elif measured < minimum:
            verdict = "below budget (not gated with --quick)"
        elif "target" not in budget:
            verdict = "ok (no target)"
        elif measured >= target:
            verdict = "ok, target met"
        else:
            verdict = "ok, below target"
        rows.append((figure, _fmt(measured, unit), _fmt(minimum, unit), _target(budget, unit),
                     noise, verdict))
    return rows, passed


def _in_ci() -> bool:
    import os

    return os.environ.get("CI") == "true"


def better_of(
    budgets: list[dict[str, Any]], first: dict[str, dict[str, Any]],
    second: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each figure from the run where it measured higher (by its budget's kind, else ratio)."""
    kinds = {str(b["figure"]): b for b in budgets}
    merged = dict(first)
    for name, info in second.items():
        budget = kinds.get(name, {"kind": "ratio"})
        old = merged.get(name)
        new_value = value_of(budget, info)
        old_value = None if old is None else value_of(budget, old)
        if old_value is None or (new_value is not None and new_value > old_value):
            merged[name] = info
    return merged


def _target(budget: dict[str, Any], unit: str) -> str:
    return _fmt(float(budget["target"]), unit) if "target" in budget else "-"


def _fmt(value: float, unit: str) -> str:
    return f"{value:,.0f}{unit}" if unit == " /s" else f"{value:.2f}{unit}"


def print_table(rows: list[tuple[str, ...]]) -> None:
    """One aligned table."""
    header = ("figure", "measured", "budget", "target", "spread s/f", "verdict")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def print_spread(paths: list[Path]) -> None:
    """Lowest, median and highest ratio (or rate) of each figure over several runs."""
    runs = [figures_of(path) for path in paths]
    names = sorted({name for run in runs for name in run})
    print(f"{'figure':30} {'lowest':>10} {'median':>10} {'highest':>10} {'range/median':>13}")
    for name in names:
        values = []
        for run in runs:
            info = run.get(name)
            if info is not None:
                values.append(float(info["ratio"] if info.get("ratio") is not None
                                     else info["rate"]))
        if values:
            middle = statistics.median(values)
            print(f"{name:30} {min(values):10.3f} {middle:10.3f} {max(values):10.3f} "
                  f"{(max(values) - min(values)) / middle:13.1%}")


def main(argv: list[str] | None = None) -> int:
    """Run or read the benchmarks, judge every budget, print the table; 1 on a breach."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds; rates not gated")
    parser.add_argument("--json", type=Path, help="read this pytest-benchmark JSON, run nothing")
    parser.add_argument("--save", type=Path, help="keep the JSON of the run here")
    parser.add_argument("--sizes", default=SIZES, help=f"ledger sizes (default {SIZES})")
    parser.add_argument("--spread", type=Path, nargs="+", help="print the spread of these runs")
    args = parser.parse_args(argv)
    if args.spread:
        print_spread(args.spread)
        return 0
    budgets = tomllib.loads(BUDGETS.read_text(encoding="utf-8"))["budget"]
    if args.json is not None:
        source = args.json
    else:
        source = args.save or Path(tempfile.mkdtemp(prefix="convledger-gate-")) / "run.json"
        run_benchmarks(quick=args.quick, sizes=args.sizes, output=source)
    figures = figures_of(source)
    rows, passed = judge(budgets, figures, quick=args.quick)
    if not passed and args.json is None:
        breached = [row[0] for row in rows if row[-1].startswith("BREACH")]
        print(f"gate: {len(breached)} breach(es) ({', '.join(breached)}); measuring again",
              file=sys.stderr)
        again = source.with_name(source.stem + "-again.json")
        run_benchmarks(quick=args.quick, sizes=args.sizes, output=again)
        figures = better_of(budgets, figures, figures_of(again))
        rows, passed = judge(budgets, figures, quick=args.quick)
    print_table(rows)
    for info in figures.values():
        if info.get("bytes_per_event") is not None:
            print(f"ledger of {info['ledger_events']:,} events ({info['figure']}): "
                  f"{info['bytes_per_event']:,.0f} bytes per event")
    print("gate: " + ("passed" if passed else "FAILED"))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
