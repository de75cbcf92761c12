"""The Python side of the write path, part by part (issue 18): microseconds per event.

Times ``MemoryStore.append`` of one event and of a batch of 100, ``SqliteStore.append``
of one event (``synchronous=NORMAL``, the whole call: its Python part is the shared
validation below plus the statements' parameters), and each step of
:func:`convledger.batch.validated_batch` on the ``provider/message`` draft of
:func:`convledger_bench.workloads.draft` (~600 B), the steps it no longer takes
(``limits.check_depth``, ``registry.check_payload``) beside those that replaced them.

Usage::

    python benchmarks/profile_write.py            # the table of parts, 5 rounds, min and max
    python benchmarks/profile_write.py --profile  # also cProfile of 2000 memory appends

Each figure is the per-event time of a loop, measured in ``--rounds`` rounds interleaved
with the other figures, reported as median [min..max] so a loaded machine shows its spread.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from convledger import batch, codec, limits
from convledger.envelope import Envelope, copied, validate_draft_fields
from convledger.kinds import default_registry
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_bench.workloads import draft

Figure = Callable[[int], float]
"""Runs ``n`` events' worth of work and returns the seconds it took."""


def _drafts(start: int, count: int) -> list[object]:
    return [draft(index) for index in range(start, start + count)]


def _memory_append(size: int) -> Figure:
    counter = iter(range(10**9))

    def run(n: int) -> float:
        store = MemoryStore()
        groups = [_drafts(next(counter) * 10**6, size) for _ in range(max(1, n // size))]
        started = time.perf_counter()
        for number, group in enumerate(groups):
            store.append(f"conv-{number % 50}", group)  # type: ignore[arg-type]
        return time.perf_counter() - started

    return run


def _sqlite_append(directory: Path) -> Figure:
    counter = iter(range(10**9))

    def run(n: int) -> float:
        path = directory / f"s{next(counter)}.db"
        store = SqliteStore(path, synchronous="NORMAL")
        drafts = _drafts(next(counter) * 10**6, n)
        started = time.perf_counter()
        for number, one in enumerate(drafts):
            store.append(f"conv-{number % 50}", [one])  # type: ignore[list-item]
        elapsed = time.perf_counter() - started
        store.close()
        return elapsed

    return run


def _part(step: Callable[[object], object]) -> Figure:
    def run(n: int) -> float:
        drafts = _drafts(0, n)
        started = time.perf_counter()
        for one in drafts:
            step(one)
        return time.perf_counter() - started

    return run


def figures(directory: Path) -> dict[str, tuple[Figure, int]]:
    """Every figure: name -> (runner, events per round)."""
    registry = default_registry()
    sample = draft(7)
    encoded = codec.encode(sample.payload)
    detached = batch._detached(sample)
    envelope = Envelope.from_draft(detached, "conv-1", 1)

    def validate_one(one: object) -> object:
        return batch.validated_batch(registry, "conv-1", [one], None)

    return {
        "memory append 1": (_memory_append(1), 2000),
        "memory append 100": (_memory_append(100), 5000),
        "sqlite append 1": (_sqlite_append(directory), 300),
        "validated_batch (1 draft)": (_part(validate_one), 3000),
        "  validate_draft_fields": (_part(validate_draft_fields), 3000),
        "  limits.check_depth": (_part(lambda _: limits.check_depth(sample.payload, "p")), 3000),
        "  codec.encode payload": (_part(lambda _: codec.encode(sample.payload)), 3000),
        "  codec.decode_stored": (_part(lambda _: codec.decode_stored(encoded.decode())), 3000),
        "  codec.encode_payload": (_part(lambda _: codec.encode_payload(sample.payload)), 3000),
        "  codec.encode_payload_copied": (
            _part(lambda _: codec.encode_payload_copied(sample.payload)),
            3000,
        ),
        "  registry.check_payload": (
            _part(lambda _: registry.check_payload(sample.kind, 1, detached.payload)),
            3000,
        ),
        "  check_appended_payload": (
            _part(lambda _: registry.check_appended_payload(sample.kind, 1, detached.payload)),
            3000,
        ),
        "Envelope.from_draft": (_part(lambda _: Envelope.from_draft(detached, "c", 1)), 3000),
        "copied(envelope)": (_part(lambda _: copied(envelope)), 3000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        table = figures(Path(name))
        samples: dict[str, list[float]] = {key: [] for key in table}
        for _ in range(arguments.rounds):
            for key, (run, events) in table.items():  # interleaved: one of each per round
                samples[key].append(run(events) / events * 1e6)
        print(f"{'part':<28} {'us/event median [min..max]':>30} {'events/s':>10}")
        for key, values in samples.items():
            median = statistics.median(values)
            print(
                f"{key:<28} {median:>12.2f} [{min(values):.2f}..{max(values):.2f}]"
                f" {1e6 / median:>10.0f}"
            )
    if arguments.profile:
        store = MemoryStore()
        drafts = _drafts(0, 2000)
        profile = cProfile.Profile()
        profile.enable()
        for number, one in enumerate(drafts):
            store.append(f"conv-{number % 50}", [one])  # type: ignore[list-item]
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
