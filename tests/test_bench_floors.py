"""The second floor and the peers measure real work (issue 18): after the minimal ledger
transaction the heads and rows are the store's, the peers run with the store's durability and
write and read the same events, and without the ``peers`` extra their figures say so and the
gate does not fail. No timing is asserted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from test_bench import load_gate, run_isolated, write_run

PEERS_INSTALLED = all(importlib.util.find_spec(name) is not None
                      for name in ("eventsourcing", "langgraph"))


def test_minimal_transaction_leaves_the_stores_ledger_effect(tmp_path: Path) -> None:
    """The same appends, batches, transitions and import on the store and on the minimal
    ledger leave the same heads, the same event rows (eventId, kind, occurredAt, canonical
    payload, at the same seq) and the same run states."""
    run_isolated(
        """
        import sqlite3, sys
        from pathlib import Path
        from convledger import canonical
        from convledger.sqlite import SqliteStore
        import convledger_bench as bench

        work = Path(sys.argv[1])
        reference = work / "reference.sqlite"
        bench.build_reference_file(reference, 3000)
        bench.build_minimal_file(work / "minimal.sqlite", 3000)
        store = SqliteStore(bench.copy_ledger(reference, work / "store.sqlite"))
        ledger = bench.MinimalLedger(work / "minimal.sqlite")
        pairs = [
            (bench.append_operations(3000, 1, 4, base=10**6),
             bench.minimal_append_operations(3000, 1, 4, base=10**6)),
            (bench.append_operations(3000, 100, 3, base=2 * 10**6),
             bench.minimal_append_operations(3000, 100, 3, base=2 * 10**6)),
            (bench.transition_operations(6, base=7),
             bench.minimal_transition_operations(6, base=7)),
            (bench.archive_operations(1, base=3 * 10**6),
             bench.minimal_archive_operations(1, base=3 * 10**6)),
        ]
        for ours, minimal in pairs:
            assert len(ours) == len(minimal)
            for operation in ours:
                operation(store)
            for operation in minimal:
                operation(ledger)
        conversations = [bench.conversation_name(n) for n in range(3)]
        conversations += ["runtime-000007", "runtime-000008", "imported-3000000"]
        for conversation_id in conversations:
            head = store.head(conversation_id)
            assert head == ledger.head(conversation_id) and head > 0, conversation_id
            ours = []
            start = 1
            while start <= head:
                page = store.read(conversation_id, from_seq=start, limit=1000)
                ours += [(item.seq, item.event_id, item.kind, item.occurred_at,
                          canonical.encode(item.payload).decode()) for item in page.items]
                start += len(page.items)
            theirs = ledger.connection.execute(
                "SELECT seq, event_id, kind, occurred_at, payload FROM events"
                " WHERE conversation_id = ? ORDER BY seq", (conversation_id,)).fetchall()
            assert ours == theirs, conversation_id
        assert store.head("conv-000000") == 1000 + 2 + 100
        assert store.head("imported-3000000") == 1000
        for conversation_id in ("runtime-000007", "runtime-000008"):
            for run_id, state in ledger.connection.execute(
                    "SELECT run_id, state FROM runs WHERE conversation_id = ?",
                    (conversation_id,)):
                assert store.load_run(conversation_id, run_id).state.value == state
        admitted = ledger.connection.execute("SELECT count(*) FROM admissions").fetchone()[0]
        assert admitted == 2
        page = ledger.read("conv-000001", 901, 100)
        assert [item["sha256"] for item in page] == [
            item.payload["sha256"]
            for item in store.read("conv-000001", from_seq=901, limit=100).items]
        store.close()
        ledger.close()
        """,
        tmp_path,
    )


def test_minimal_floor_refuses_an_import_of_an_existing_conversation(tmp_path: Path) -> None:
    """The minimal import checks the conversation is absent and then changes nothing."""
    run_isolated(
        """
        import sys
        from pathlib import Path
        import convledger_bench as bench

        work = Path(sys.argv[1])
        bench.build_minimal_file(work / "minimal.sqlite", 1000)
        ledger = bench.MinimalLedger(work / "minimal.sqlite")
        (operation,) = bench.minimal_archive_operations(1, base=10**6)
        operation(ledger)
        try:
            operation(ledger)
        except ValueError:
            pass
        else:
            raise AssertionError("a second import of the same conversation was accepted")
        assert ledger.head("imported-1000000") == 1000
        assert ledger.connection.execute("SELECT count(*) FROM events").fetchone()[0] == 2000
        assert not ledger.connection.in_transaction
        ledger.close()
        """,
        tmp_path,
    )


def test_figures_say_peers_not_installed_and_the_gate_passes(tmp_path: Path) -> None:
    """Without the ``peers`` extra (its imports blocked here), the append and read figures
    carry the minimal floor and name each peer as not measured; the gate reports those budgets
    with the reason and does not fail on them."""
    run_isolated(
        """
        import json, sys
        from pathlib import Path
        sys.modules["eventsourcing"] = None  # import eventsourcing now raises ImportError
        sys.modules["langgraph"] = None
        from convledger.sqlite import SqliteStore
        import convledger_bench as bench

        assert bench.peers_missing() == bench.PEERS_MISSING
        work = Path(sys.argv[1])
        reference = work / "reference.sqlite"
        bench.build_reference_file(reference, 1000)
        bench.build_minimal_file(work / "minimal.sqlite", 1000)
        beside = bench.Beside.open(work / "minimal.sqlite", work / "es.sqlite", work / "lg.sqlite")
        assert beside.eventsourcing is None and beside.langgraph is None
        store = SqliteStore(bench.copy_ledger(reference, work / "store.sqlite"))
        floor = bench.Floor(reference, work)
        made = bench.append_figure(store, floor, 1000, "single", 4, base=10**6, warmup=1,
                                   beside=beside)
        assert set(made.others) == {bench.MINIMAL}
        assert made.not_measured == {name: bench.PEERS_MISSING
                                     for name in (*bench.PEERS, bench.FASTEST_PEER)}
        page = bench.read_figure(store, floor.raw, 1000, 100, 4, warmup=1, beside=beside)
        assert set(page.others) == {bench.MINIMAL} and page.not_measured == {}
        read = bench.read_figure(store, floor.raw, 1000, 100, 4, warmup=1, beside=beside,
                                 peers=True)
        assert read.id == "read.peers100@1e+03" and set(read.others) == {bench.MINIMAL}
        assert set(read.not_measured) == {*bench.PEERS, "eventsourcing.decoded",
                                          bench.FASTEST_PEER}
        document = {"benchmarks": [{"extra_info": made.as_json()}, {"extra_info": read.as_json()}]}
        (work / "run.json").write_text(json.dumps(document))
        assert not (work / "es.sqlite").exists() and not (work / "lg.sqlite").exists()
        store.close(); floor.close(); beside.close()
        """,
        tmp_path,
    )
    gate = load_gate()
    figures = gate.figures_of(tmp_path / "run.json")
    assert figures["append.single@1e+03 vs minimal"]["ratio"] > 0
    budgets = [
        {"figure": "append.single@1e+03 vs minimal", "kind": "ratio", "minimum": 0.001},
        {"figure": "append.single@1e+03 vs fastest_peer", "kind": "ratio", "minimum": 1.0,
         "requires": "peers"},
        {"figure": "read.peers100@1e+03 vs eventsourcing", "kind": "ratio", "minimum": 1.0,
         "requires": "peers"},
    ]
    rows, passed = gate.judge(budgets, figures, quick=False)
    assert passed is True, rows
    assert rows[1][-1].startswith("not measured: peers not installed"), rows
    assert rows[2][-1].startswith("not measured: peers not installed"), rows


@pytest.mark.skipif(not PEERS_INSTALLED,
                    reason="the peers extra is not installed (pip install -e '.[peers]')")
def test_peers_run_with_the_stores_durability_on_the_same_events(tmp_path: Path) -> None:
    """Both peers' connections are WAL with synchronous=FULL (2), as the store's; their ledgers
    hold the benchmark's events; an append lands after the head and a page reads the events."""
    run_isolated(
        """
        import json, sys
        from pathlib import Path
        import convledger_bench as bench

        work = Path(sys.argv[1])
        bench.build_eventsourcing_file(work / "es.sqlite", 2000)
        bench.build_langgraph_file(work / "lg.sqlite", 2000)
        bench.build_minimal_file(work / "minimal.sqlite", 2000)
        beside = bench.Beside.open(work / "minimal.sqlite", work / "es.sqlite", work / "lg.sqlite")
        assert beside.missing is None
        assert beside.eventsourcing.durability() == ("wal", 2)
        assert beside.langgraph.durability() == ("wal", 2)
        assert beside.eventsourcing.heads == {"conv-000000": 1000, "conv-000001": 1000}
        assert beside.langgraph.heads == {"conv-000000": 1000, "conv-000001": 1000}
        contenders, absent = beside.appends(2000, 1, 3, base=10**6)
        assert absent == {} and set(contenders) == {"minimal", *bench.PEERS}
        for call in contenders.values():
            for _ in range(3):
                call()
        assert beside.eventsourcing.select("conv-000001", 1000, 10)[0].state == (
            bench.event_row(10**6 + 1)[3].encode())
        listed = beside.langgraph.list("conv-000000", 1003, 1)
        assert listed[0].checkpoint["channel_values"]["event"] == bench.draft(10**6 + 2).payload
        assert beside.minimal.head("conv-000000") == 1002
        windows = [("conv-000000", 1), ("conv-000001", 901)]
        contenders, absent = beside.reads(windows, 100, peers=True)
        assert absent == {}
        assert set(contenders) == {"minimal", "eventsourcing.decoded", *bench.PEERS}
        for call in contenders.values():
            call(); call()
        first = beside.eventsourcing.select("conv-000001", 900, 100)
        assert [event.originator_version for event in first] == list(range(901, 1001))
        (stored,) = beside.minimal.connection.execute(
            "SELECT payload FROM events WHERE conversation_id = 'conv-000001' AND seq = 901"
        ).fetchone()
        assert first[0].state.decode() == stored and json.loads(stored)["sha256"]
        beside.close()
        """,
        tmp_path,
    )


def test_gate_expands_contenders_and_skips_full_only_budgets_when_quick(tmp_path: Path) -> None:
    """Each contender of a figure is judged as '<figure> vs <name>'; a full-only budget is
    reported, not breached, by --quick and is a breach when missing from a full run."""
    gate = load_gate()
    run = tmp_path / "run.json"
    write_run(run, {"append.single@1e+03": {
        "ratio": 0.7, "store_median": 2.0,
        "against": {"minimal": {"median": 1.0, "ratio": 0.5, "spread": 0.1},
                    "fastest_peer": {"median": 3.0, "ratio": 1.5, "spread": 0.2}},
        "not_measured": {}}})
    figures = gate.figures_of(run)
    assert figures["append.single@1e+03 vs minimal"]["ratio"] == 0.5
    budgets = [
        {"figure": "append.single@1e+03 vs minimal", "kind": "ratio", "minimum": 0.6},
        {"figure": "append.single@1e+03 vs fastest_peer", "kind": "ratio", "minimum": 1.0},
    ]
    rows, passed = gate.judge(budgets, figures, quick=True)
    assert passed is False and rows[0][-1] == "BREACH" and rows[1][-1] == "ok (no target)"
    scale = [{"figure": "read.scale1e6", "kind": "ratio", "minimum": 0.75, "full_only": True}]
    rows, passed = gate.judge(scale, figures, quick=True)
    assert passed is True and rows[0][-1] == "not measured: measured by the full gate only"
    assert gate.judge(scale, figures, quick=False)[1] is False


def test_fastest_peer_is_the_peer_with_the_lowest_median(tmp_path: Path) -> None:
    """``fastest_peer`` takes the quicker peer's median; the decoded read is not a peer of it."""
    run_isolated(
        """
        import convledger_bench as bench

        made = bench.figure("x", "x", {"store": [2.0] * 3, "floor": [1.0] * 3,
                                       "minimal": [1.0] * 3, "eventsourcing": [4.0] * 3,
                                       "langgraph": [3.0] * 3,
                                       "eventsourcing.decoded": [0.5] * 3}, events=1)
        assert made.against("minimal") == 0.5 and made.against("fastest_peer") == 1.5
        assert made.as_json()["against"]["fastest_peer"]["median"] == 3.0
        alone = bench.figure("y", "y", {"store": [2.0] * 3, "floor": [1.0] * 3}, events=1)
        assert alone.against("fastest_peer") is None and alone.as_json()["against"] == {}
        """,
        tmp_path,
    )
