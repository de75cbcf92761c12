"""Plot read and append cost against ledger size from a benchmark run (issue 8).

    python benchmarks/plot.py RUN.json [--out benchmarks/scaling.png]

``RUN.json`` is the ``--benchmark-json`` of ``bench_sqlite.py`` run with
several ``--bench-sizes`` (``gate.py --save`` writes one). The figure has two
panels, microseconds per event against ledger size (log scale): a bounded
read of a page of 100, and appends (one draft, a batch of 100, a runtime
transition), each for the store and for its raw-SQLite floor of the same run.
A flat line is a cost that does not grow with the ledger.

Needs matplotlib, the optional extra ``plot`` (``pip install -e .[plot]``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_SIZED = re.compile(r"(?P<name>[a-z0-9.]+)@(?P<size>[0-9.e+]+)")


def series(path: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """Figure name -> ledger size -> extra_info, for every sized figure in the run."""
    document = json.loads(path.read_text(encoding="utf-8"))
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for entry in document.get("benchmarks", []):
        info = entry.get("extra_info", {})
        match = _SIZED.fullmatch(str(info.get("figure", "")))
        if match:
            found.setdefault(match["name"], {})[int(float(match["size"]))] = info
    return found


def per_event_us(info: dict[str, Any], key: str) -> float:
    """Microseconds per event of the store or floor median."""
    return float(info[key]) / int(info["events"]) * 1e6


def main() -> None:
    """Draw the two panels and write the PNG."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "scaling.png")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = series(args.run)
    panels = [
        ("bounded read, page of 100 (decoded envelopes)", ["read.page100"]),
        ("append", ["append.single", "append.batch100", "append.transition"]),
    ]
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for axis, (title, names) in zip(axes, panels, strict=True):
        for number, name in enumerate(names):
            points = found.get(name, {})
            if not points:
                continue
            sizes = sorted(points)
            color = f"C{number}"
            axis.plot(sizes, [per_event_us(points[s], "store_median") for s in sizes],
                      marker="o", color=color, label=f"{name} (store)")
            axis.plot(sizes, [per_event_us(points[s], "floor_median") for s in sizes],
                      marker="s", linestyle="--", color=color, label=f"{name} (raw floor)")
        axis.set_xscale("log")
        if len(names) > 1:
            axis.set_yscale("log")  # appends: a single draft and a batch differ 100-fold
        else:
            axis.set_ylim(bottom=0)
        axis.set_xlabel("events in the ledger")
        axis.set_ylabel("microseconds per event (median)")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("convledger SQLite store: cost against ledger size (lower is faster)")
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
