"""Shared setup of the benchmarks: realistic events, ledgers of a given size, a figures table.

Run with ``pytest benchmarks/`` (see ``benchmarks/README.md``); the default
test run never collects this directory (``testpaths = ["tests"]``).

* Files named ``bench_*.py`` are collected here, so ``pytest benchmarks/``
  needs no ``-o python_files`` override; functions are still ``test_*``.
* ``--bench-sizes=1000,100000`` chooses the ledger sizes of the size-dependent
  benchmarks (a test that takes ``ledger_size`` runs once per size).
* ``--bench-quick`` runs fewer rounds (the CI gate); ``--bench-cache=DIR``
  keeps the SQLite benchmark ledgers built once (default ``~/.cache/convledger-bench``).
* Each benchmark may state in ``benchmark.extra_info`` how many ``events`` one
  call handles and whether it is its group's ``baseline``; the run ends with a
  table of events/s and of speed relative to the baseline, and the same
  figures are in ``--benchmark-json`` for the gate.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.memory import MemoryStore
from convledger_bench import event_id, payload

DEFAULT_SIZES = "1000,100000"
EVENTS_PER_CONVERSATION = 200
"""Every ledger is split into conversations of this many events (at least 2 pages of 100)."""
FILL_BATCH = 10
"""Conversations are filled in turns of this many events each, interleaved as in real use."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--bench-sizes``: the ledger sizes of the size-dependent benchmarks."""
    parser.addoption(
        "--bench-sizes",
        default=DEFAULT_SIZES,
        help=f"comma-separated ledger sizes in events (default {DEFAULT_SIZES}; 1e6 is allowed)",
    )
    parser.addoption(
        "--bench-quick",
        action="store_true",
        help="fewer rounds per figure (the CI gate, benchmarks/gate.py --quick)",
    )
    parser.addoption(
        "--bench-cache",
        default="~/.cache/convledger-bench",
        help="directory where large benchmark ledgers are built once and kept",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect ``bench_*.py`` (unless named on the command line, which pytest collects anyway)."""
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)
    ):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def ledger_sizes(config: pytest.Config) -> list[int]:
    """The sizes chosen with ``--bench-sizes`` (``1e5`` and ``100000`` both work)."""
    text = str(config.getoption("--bench-sizes"))
    return [int(float(part)) for part in text.split(",") if part.strip()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every benchmark that takes ``ledger_size`` once per chosen size."""
    if "ledger_size" in metafunc.fixturenames:
        sizes = ledger_sizes(metafunc.config)
        metafunc.parametrize("ledger_size", sizes, ids=[f"{size:.0e}" for size in sizes])


# -- realistic events ----------------------------------------------------------------
# The same events ``convledger-conformance --bench`` measures, defined once there.

provider_message = payload
"""A ``provider/message`` v1 payload: an assistant turn with text and a tool call."""


def wire_envelope(
    index: int, *, conversation_id: str = "conv-000000", seq: int = 1
) -> dict[str, JsonValue]:
    """A realistic envelope as a wire object: about 800 bytes of canonical JSON."""
    return {
        "schemaVersion": 1,
        "eventId": event_id(index),
        "conversationId": conversation_id,
        "seq": seq,
        "kind": "provider/message",
        "occurredAt": "2026-05-09T07:35:25.123456Z",
        "payload": provider_message(index),
    }


def draft(index: int) -> EventDraft:
    """The draft of :func:`wire_envelope` ``(index)``: what a producer appends."""
    return EventDraft(
        event_id=event_id(index),
        kind="provider/message",
        occurred_at="2026-05-09T07:35:25.123456Z",
        payload=provider_message(index),
    )


def conversation_name(number: int) -> str:
    """The conversationId of the ``number``-th conversation of a benchmark ledger."""
    return f"conv-{number:06d}"


def fill_plan(size: int) -> Iterator[tuple[str, list[int]]]:
    """(conversationId, event indexes) batches that build a ledger of ``size`` events.

    ``size // EVENTS_PER_CONVERSATION`` conversations (at least one) take turns
    of :data:`FILL_BATCH` events, so each conversation's events are spread over
    the whole fill, as in a store many conversations write at once.
    """
    conversations = max(1, size // EVENTS_PER_CONVERSATION)
    index = 0
    while index < size:
        for number in range(conversations):
            take = min(FILL_BATCH, size - index)
            if take <= 0:
                break
            yield conversation_name(number), list(range(index, index + take))
            index += take


# -- in-memory ledgers of a given size -------------------------------------------------


@attrs.define
class MemoryLedger:
    """A :class:`MemoryStore` holding ``size`` events, and fresh drafts to append to it.

    Appends made by benchmarks count in ``appended``; :meth:`keep_size`
    rebuilds the store once they exceed a tenth of ``size``, so a benchmark
    "at 1e3 events" never measures a much larger store.
    """

    size: int
    store: MemoryStore
    conversations: int
    build_seconds: float
    appended: int = 0
    next_index: int = 0

    @classmethod
    def build(cls, size: int) -> MemoryLedger:
        """Fill a new store through the public ``append``, as a producer would."""
        started = time.perf_counter()
        store = MemoryStore()
        for conversation_id, indexes in fill_plan(size):
            store.append(conversation_id, [draft(index) for index in indexes])
        conversations = max(1, size // EVENTS_PER_CONVERSATION)
        return cls(size, store, conversations, time.perf_counter() - started, 0, size)

    def keep_size(self) -> None:
        """Rebuild the store when appends have grown it by more than 10 %."""
        if self.appended * 10 > self.size:
            fresh = MemoryLedger.build(self.size)
            self.store, self.appended, self.next_index = fresh.store, 0, fresh.next_index

    def fresh_drafts(self, count: int) -> list[EventDraft]:
        """``count`` drafts whose eventIds the store has not seen."""
        first = self.next_index + 10**9  # far from the indexes the fill used
        self.next_index += count
        return [draft(index) for index in range(first, first + count)]

    def conversation(self, turn: int) -> str:
        """The conversation a benchmark uses on its ``turn``-th call (round robin)."""
        return conversation_name(turn % self.conversations)


_LEDGERS = pytest.StashKey[dict[int, MemoryLedger]]()


@pytest.fixture
def memory_ledger(request: pytest.FixtureRequest, ledger_size: int) -> MemoryLedger:
    """The session's in-memory ledger of ``ledger_size`` events, built on first use."""
    ledgers = request.config.stash.setdefault(_LEDGERS, {})
    if ledger_size not in ledgers:
        ledgers[ledger_size] = MemoryLedger.build(ledger_size)
        _record(
            request.config,
            f"build MemoryStore of {ledger_size:.0e} events",
            ledgers[ledger_size].build_seconds,
            "s",
        )
    return ledgers[ledger_size]


# -- the figures table -------------------------------------------------------------------


@attrs.frozen
class Figure:
    """One line of the closing table."""

    group: str
    name: str
    median: float
    """Seconds per call."""
    events: int
    """Events (or envelopes) one call handles; 0 when the figure is not a rate."""
    baseline: bool


_FIGURES = pytest.StashKey[list[Figure]]()
_NOTES = pytest.StashKey[list[str]]()


def _record(config: pytest.Config, label: str, value: float, unit: str) -> None:
    config.stash.setdefault(_NOTES, []).append(f"{label}: {value:.4g} {unit}")


@pytest.fixture
def record_figure(request: pytest.FixtureRequest) -> Any:
    """A callable ``(label, value, unit)`` that adds a line to the closing table."""

    def record(label: str, value: float, unit: str) -> None:
        _record(request.config, label, value, unit)

    return record


@pytest.fixture(autouse=True)
def _collect_figure(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each benchmark, keep its median and ``extra_info`` for the closing table."""
    yield
    bench = request.node.funcargs.get("benchmark") if hasattr(request.node, "funcargs") else None
    stats = getattr(bench, "stats", None)
    if bench is None or not stats:
        return
    request.config.stash.setdefault(_FIGURES, []).append(
        Figure(
            group=str(bench.group or ""),
            name=request.node.name,
            median=float(stats.stats.median),
            events=int(bench.extra_info.get("events", 0)),
            baseline=bool(bench.extra_info.get("baseline", False)),
        )
    )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print events/s and speed relative to each group's baseline (> 1 means faster)."""
    figures = config.stash.get(_FIGURES, [])
    notes = config.stash.get(_NOTES, [])
    if not figures and not notes:
        return
    write = terminalreporter.write_line
    terminalreporter.section("convledger figures (medians)")
    for group in dict.fromkeys(figure.group for figure in figures):
        members = [figure for figure in figures if figure.group == group]
        baseline = next((figure for figure in members if figure.baseline), None)
        write(f"[{group}]")
        for figure in members:
            rate = f"{figure.events / figure.median:12,.0f} /s" if figure.events else " " * 15
            relative = (
                f"  x{baseline.median / figure.median:6.2f} vs {baseline.name}"
                if baseline is not None and figure is not baseline
                else ""
            )
            write(f"  {figure.name:60s} {figure.median * 1e6:12.2f} us {rate}{relative}")
    for note in notes:
        write(note)
