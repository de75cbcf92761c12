"""A figure's ratio to its floor, with the run's own uncertainty (issue 34).

Store and floor run in rotation, one call each per round, so the machine's
drift hits both. The figure is the **ratio of the lower quartiles**,
``q1(floor) / q1(store)`` (1.0: as fast as the floor). A loaded machine only
ever adds time to a call, and on a shared 2-core runner (load 9-10) it added
so much to a quarter to a half of the calls over the wire that the medians
moved by up to 70 % between two runs of the same server; the lower quartile
still follows the call's own cost, and a regression of most calls (a slower
code path) moves it as it moves the median. Its uncertainty is a **paired
bootstrap** interval: the rounds are resampled with replacement (a round
keeps its store and its floor sample together, so a slow stretch of the
machine stays paired), the ratio of lower quartiles is computed on each resample,
and the 2.5th and 97.5th percentiles of those bound it. That assumes nothing
about the shape of the noise: a loaded runner widens the interval instead of
moving the figure, and a verdict that the interval cannot decide is
"inconclusive" (:mod:`convledger_bench.baseline`). The resampling is seeded,
so the same samples always give the same interval. The standard library is
enough (``random``, ``statistics``): nothing is needed at run time beyond the
project's dependencies.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import Any

import attrs

CONFIDENCE = 0.95
"""The coverage of :attr:`RatioEstimate.low` .. :attr:`RatioEstimate.high`."""
RESAMPLES = 2000
QUANTILE = 0.25
"""The statistic of each side's samples: the lower quartile (see the module docstring)."""


def quantile(samples: Sequence[float], q: float = QUANTILE) -> float:
    """The ``q`` quantile of the samples (linear between the two nearest ranks)."""
    ordered = sorted(samples)
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


@attrs.frozen
class RatioEstimate:
    """The ratio of the lower quartiles (floor / store) and its bootstrap interval."""

    ratio: float
    low: float
    high: float
    rounds: int
    spread: float
    """Interquartile range of the store's samples over their median (the run's noise)."""

    def as_json(self) -> dict[str, Any]:
        """The estimate as plain JSON."""
        return {"ratio": self.ratio, "low": self.low, "high": self.high,
                "rounds": self.rounds, "spread": self.spread}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RatioEstimate:
        """The estimate a baseline file holds."""
        return cls(float(data["ratio"]), float(data["low"]), float(data["high"]),
                   int(data["rounds"]), float(data["spread"]))


def _spread(samples: Sequence[float]) -> float:
    if len(samples) < 4:
        return 0.0
    first, _, third = statistics.quantiles(samples, n=4)
    return (third - first) / statistics.median(samples)


def estimate(
    store: Sequence[float], floor: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0
) -> RatioEstimate:
    """The :class:`RatioEstimate` of paired samples (``store[i]`` and ``floor[i]``: round i)."""
    if len(store) != len(floor) or not store:
        raise ValueError("store and floor need the same, non-zero number of samples")
    count = len(store)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        picked = [rng.randrange(count) for _ in range(count)]
        ratios.append(quantile([floor[i] for i in picked]) / quantile([store[i] for i in picked]))
    ratios.sort()
    tail = (1.0 - CONFIDENCE) / 2
    low = ratios[int(tail * (resamples - 1))]
    high = ratios[int((1.0 - tail) * (resamples - 1))]
    middle = quantile(floor) / quantile(store)
    return RatioEstimate(middle, min(low, middle), max(high, middle), count, _spread(store))
