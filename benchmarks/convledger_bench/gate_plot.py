"""The figures of ``convledger-conformance bench`` against the baseline, as a PNG (issue 34).

One horizontal bar per figure: this run's ratio to its floor with its 95 %
interval, and the baseline's beside it when there is one. Needs matplotlib
(the optional extra ``plot``); :class:`PlotUnavailable` says so without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


COLOURS = {"REGRESSION": "tab:red", "inconclusive": "tab:orange"}
"""This run's bar colour by verdict (blue otherwise)."""


def plot(
    run: Mapping[str, Any], baseline: Mapping[str, Any] | None, path: Path,
    verdicts: Mapping[str, str] | None = None,
) -> None:
    """Draw ``run``'s figures (and ``baseline``'s) into ``path``; a figure that regressed is
    red, an inconclusive one orange, and its verdict is written beside it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise PlotUnavailable(f"--plot needs matplotlib (pip install 'convledger[plot]'): "
                              f"{error}") from None
    figures: dict[str, Any] = dict(run["figures"])
    saved: dict[str, Any] = dict(baseline["figures"]) if baseline else {}
    names = list(figures)
    fig, axes = plt.subplots(figsize=(9, 0.5 * len(names) + 1.6))
    height = 0.38 if saved else 0.6
    for row, name in enumerate(names):
        now = figures[name]
        verdict = (verdicts or {}).get(name, "")
        axes.barh(row + (height / 2 if saved else 0), now["ratio"], height,
                  xerr=[[now["ratio"] - now["low"]], [now["high"] - now["ratio"]]],
                  color=COLOURS.get(verdict, "tab:blue"), capsize=3,
                  label="this run" if row == 0 else None)
        if verdict in COLOURS:
            axes.annotate(verdict, (now["high"], row), xytext=(6, 0),
                          textcoords="offset points", va="center", fontsize=8,
                          color=COLOURS[verdict])
        old = saved.get(name)
        if old is not None:
            axes.barh(row - height / 2, old["ratio"], height,
                      xerr=[[old["ratio"] - old["low"]], [old["high"] - old["ratio"]]],
                      color="tab:gray", capsize=3, label="baseline" if row == 0 else None)
    axes.set_yticks(range(len(names)),
                    [f"{name}\nvs {figures[name]['floor']}" for name in names], fontsize=8)
    axes.invert_yaxis()
    axes.axvline(1.0, color="black", linewidth=0.8, linestyle=":")
    axes.set_xlabel("ratio = floor time / store time (1.0: as fast as the floor; "
                    "bars: 95 % interval)")
    axes.set_title(f"convledger bench: {run.get('store', '')}"[:90], fontsize=9)
    axes.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
