"""The measurement loop and the ratios: contenders in rotation, medians, spreads, figures.

Store and floor run in rotation, one call each per round (:func:`interleave`),
so drift of the machine hits both; a :class:`Figure` is built from the
medians of their samples (``ratio = floor median / store median``) and
carries the interquartile spread of each.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

MINIMAL = "minimal"
"""The minimal ledger transaction (:mod:`convledger_bench.minimal`), the second floor."""
PEERS = ("eventsourcing", "langgraph")
"""The peers' contender names (:mod:`convledger_bench.peers`); ``eventsourcing.decoded`` is
eventsourcing's read with ``json.loads`` of each state, beside them."""
FASTEST_PEER = "fastest_peer"
"""The faster of :data:`PEERS` in the same figure (its median, its spread)."""

Runner = Callable[[Callable[[], None], int, int], None]
"""``runner(one_round, rounds, warmup)``: calls ``one_round`` warmup + rounds times."""


def _loop(one_round: Callable[[], None], rounds: int, warmup: int) -> None:
    for _ in range(warmup + rounds):
        one_round()


def interleave(
    contenders: Mapping[str, Callable[[], object]],
    *,
    rounds: int,
    warmup: int = 1,
    runner: Runner | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each contender, ``rounds`` samples each, measured in rotation.

    Round ``r`` starts with the ``r``-th contender, so none always runs first
    or last. The first ``warmup`` rounds are dropped. ``runner`` drives the
    rounds (pytest-benchmark's ``pedantic`` in ``benchmarks/``); by default a loop.
    """
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    counter = [0]

    def one_round() -> None:
        shift = counter[0] % len(names)
        counter[0] += 1
        for name in names[shift:] + names[:shift]:
            call = contenders[name]
            started = time.perf_counter_ns()
            call()
            samples[name].append((time.perf_counter_ns() - started) / 1e9)

    (runner or _loop)(one_round, rounds, warmup)
    return {name: values[warmup:] for name, values in samples.items()}


def median(samples: Sequence[float]) -> float:
    """The median of the samples (the figure every ratio is built from)."""
    return statistics.median(samples)


def spread(samples: Sequence[float]) -> float:
    """Interquartile range divided by the median: the run's relative noise."""
    if len(samples) < 4:
        return 0.0
    low, _, high = statistics.quantiles(samples, n=4)
    return (high - low) / statistics.median(samples)



@attrs.frozen
class Figure:
    """One measured figure: the store's median, its floor's, their ratio, and the noise."""

    id: str
    description: str
    events: int
    """Events one store call handles (for the rate)."""
    store_median: float
    """Seconds per store call."""
    floor_median: float | None
    """Seconds per floor call, when the figure has a floor."""
    ratio: float | None
    """Floor over store (see the module docstring); None for a rate-only figure."""
    store_spread: float
    floor_spread: float
    others: Mapping[str, tuple[float, float]] = attrs.field(factory=dict)
    """Further contenders of the same run (the minimal floor, the peers): (median, spread)."""
    not_measured: Mapping[str, str] = attrs.field(factory=dict)
    """Contenders this figure would have had, with the reason they were not measured."""

    def against(self, name: str) -> float | None:
        """The contender's median over the store's (1.0: as fast as it); None when absent."""
        if name == FASTEST_PEER:
            peers = [self.others[peer][0] for peer in PEERS if peer in self.others]
            return min(peers) / self.store_median if peers else None
        found = self.others.get(name)
        return None if found is None else found[0] / self.store_median

    @property
    def rate(self) -> float:
        """Events per second of the store call."""
        return self.events / self.store_median

    def as_json(self) -> dict[str, Any]:
        """The figure as plain JSON (the gate reads it from ``extra_info``)."""
        return {
            "figure": self.id,
            "description": self.description,
            "events": self.events,
            "store_median": self.store_median,
            "floor_median": self.floor_median,
            "ratio": self.ratio,
            "rate": self.rate,
            "store_spread": self.store_spread,
            "floor_spread": self.floor_spread,
            "against": self._against_json(),
            "not_measured": dict(self.not_measured),
        }

    def _against_json(self) -> dict[str, dict[str, float | None]]:
        found: dict[str, dict[str, float | None]] = {
            name: {"median": median_, "ratio": self.against(name), "spread": noise}
            for name, (median_, noise) in self.others.items()
        }
        fastest = [peer for peer in PEERS if peer in self.others]
        if fastest:
            quickest = min(fastest, key=lambda peer: self.others[peer][0])
            found[FASTEST_PEER] = {"median": self.others[quickest][0],
                                   "ratio": self.against(FASTEST_PEER),
                                   "spread": self.others[quickest][1]}
        return found


def figure(
    figure_id: str,
    description: str,
    samples: Mapping[str, Sequence[float]],
    *,
    events: int,
    store: str = "store",
    floor: str | None = "floor",
    not_measured: Mapping[str, str] | None = None,
) -> Figure:
    """The :class:`Figure` of interleaved samples (ratio = floor median / store median).

    Every other sample series (the minimal floor, the peers) becomes one of
    :attr:`Figure.others`; ``not_measured`` names contenders left out, and why.
    """
    store_median = median(samples[store])
    others = {name: (median(values), spread(values)) for name, values in samples.items()
              if name not in (store, floor)}
    floor_median = None if floor is None else median(samples[floor])
    return Figure(
        id=figure_id,
        description=description,
        events=events,
        store_median=store_median,
        floor_median=floor_median,
        ratio=None if floor_median is None else floor_median / store_median,
        store_spread=spread(samples[store]),
        floor_spread=0.0 if floor is None else spread(samples[floor]),
        others=others,
        not_measured=dict(not_measured or {}),
    )



@attrs.frozen
class Plan:
    """How long to measure: rounds per figure and ledger sizes."""

    sizes: tuple[int, ...]
    append_rounds: int
    batch_rounds: int
    read_rounds: int
    export_rounds: int
    warmup: int = 3
    search_rounds: int = 60
    """Rounds of ``search.own``; ``search.granted`` (tens of ms at 1e5) runs half as many."""

    @classmethod
    def of(cls, *, quick: bool, sizes: Sequence[int] | None = None) -> Plan:
        """The quick plan (CI, minutes) or the full one."""
        chosen = tuple(sizes) if sizes else ((1000, 100_000))
        if quick:
            return cls(chosen, append_rounds=300, batch_rounds=50, read_rounds=200,
                       export_rounds=25, search_rounds=60)
        return cls(chosen, append_rounds=600, batch_rounds=80, read_rounds=400, export_rounds=30,
                   search_rounds=120)


class Counter:
    """A shared turn counter, so each call of a contender gets the next prepared operation."""

    def __init__(self) -> None:
        self.value = -1

    def next(self) -> int:
        """The next turn."""
        self.value += 1
        return self.value


