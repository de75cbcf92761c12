"""The report of one run: every figure, the figures not measured, the machine that ran them."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from convledger_bench.measure import Figure


def machine() -> dict[str, str]:
    """What ran the figures: cores, CPU model, Python and SQLite versions."""
    model = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


@attrs.frozen
class BenchReport:
    """Every figure of one run, and the machine that ran it."""

    figures: tuple[Figure, ...]
    machine: Mapping[str, str]
    skipped: Mapping[str, str] = attrs.field(factory=dict)
    """Figures not measured, with the reason (a capability the store does not declare)."""

    def table(self) -> str:
        """One line per figure: id, store median (microseconds), rate, ratio, spreads."""
        lines = [
            " ".join(f"{key}={value}" for key, value in self.machine.items()),
            f"{'figure':28} {'store us':>10} {'events/s':>12} {'ratio':>8} {'spread':>14}",
        ]
        for item in self.figures:
            ratio = "-" if item.ratio is None else f"{item.ratio:.2f}"
            noise = f"{item.store_spread:.0%}/{item.floor_spread:.0%}"
            lines.append(f"{item.id:28} {item.store_median * 1e6:10,.0f} {item.rate:12,.0f} "
                         f"{ratio:>8} {noise:>14}")
        lines.extend(f"{name:28} not measured: {why}" for name, why in self.skipped.items())
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON."""
        return {
            "machine": dict(self.machine),
            "figures": [item.as_json() for item in self.figures],
            "skipped": dict(self.skipped),
        }

