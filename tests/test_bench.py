"""The benchmark machinery measures what it claims: the raw floor replays the store's own writes,
rounds rotate, and the gate flags a figure below its budget (issue 8). No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

GATE = Path(__file__).resolve().parents[1] / "benchmarks" / "gate.py"


def load_gate() -> ModuleType:
    """``benchmarks/gate.py`` as a module (it is a script, not a package member)."""
    spec = importlib.util.spec_from_file_location("convledger_gate", GATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_isolated(code: str, tmp_path: Path) -> None:
    """Run ``code`` (asserts on ``convledger_bench``) in a fresh interpreter.

    In a subprocess because importing ``convledger_bench`` into the
    test process changes which 20 derandomized programs
    ``tests/test_sqlite_machine.py::test_machine_kills_the_broken_store``
    generates (its examples depend on the process's import history), and
    with them whether that test finds its broken store (reported to the lead).
    """
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr


def test_raw_replay_writes_exactly_the_rows_the_store_writes(tmp_path: Path) -> None:
    """Replaying recorded appends and transitions on a bare copy gives the store's rows."""
    run_isolated(
        """
        import sqlite3, sys
        from pathlib import Path
        import convledger_bench as bench

        def table(path, sql):
            connection = sqlite3.connect(path)
            try:
                return connection.execute(sql).fetchall()
            finally:
                connection.close()

        work = Path(sys.argv[1])
        reference = work / "reference.sqlite"
        bench.build_reference_file(reference, 30)
        floor = bench.Floor(reference, work)
        operations = bench.append_operations(30, 3, 4, base=10**6)
        operations += bench.transition_operations(3, base=7)
        for log in floor.record(operations):
            bench.replay(floor.raw, log)
        floor.close()
        for sql in (
            "SELECT * FROM events ORDER BY conversation_id, seq",
            "SELECT rowid, * FROM events_fts ORDER BY rowid",
            "SELECT * FROM heads ORDER BY conversation_id",
            "SELECT * FROM runs ORDER BY conversation_id, run_id",
        ):
            assert table(floor.recorder_path, sql) == table(floor.raw_path, sql), sql
        assert len(table(floor.raw_path, "SELECT 1 FROM events")) == 30 + 12 + 3
        """,
        tmp_path,
    )


def test_search_replay_runs_exactly_the_statements_the_store_runs(tmp_path: Path) -> None:
    """The search floor replays, SQL text and bound values alike, what SQLite ran for the store."""
    run_isolated(
        """
        import sys
        from pathlib import Path
        from convledger.sqlite import SqliteStore
        import convledger_bench as bench

        work = Path(sys.argv[1])
        reference = work / "reference.sqlite"
        bench.build_reference_file(reference, 2000)
        floor = bench.SearchFloor(bench.copy_ledger(reference, work / "floor.sqlite"))
        connections = []
        store = SqliteStore(bench.copy_ledger(reference, work / "store.sqlite"),
                            connection_hook=connections.append)
        (connection,) = connections
        queries = [query for mode in bench.SEARCH_MODES
                   for query in bench.search_queries(2000, mode, 4)]
        logs, found = floor.record(queries)
        ran_for_store, ran_by_floor = [], []
        connection.set_trace_callback(ran_for_store.append)
        floor.raw.set_trace_callback(ran_by_floor.append)
        for query, log, hits in zip(queries, logs, found, strict=True):
            requester, text, authorize = query
            answer = store.search(requester, text, limit=bench.SEARCH_LIMIT, authorize=authorize)
            assert [(hit.conversation_id, hit.seq) for hit in answer] == hits
            assert len(hits) == bench.SEARCH_LIMIT
            bench.replay(floor.raw, log)
        connection.set_trace_callback(None)
        floor.raw.set_trace_callback(None)
        assert ran_for_store == ran_by_floor
        assert sum("events_fts MATCH" in sql for sql in ran_by_floor) >= len(queries)
        paged = "SELECT rowid, conversation_id FROM events_fts"
        assert sum(sql.startswith(paged) for sql in ran_by_floor) >= 4
        assert {hits[0][0] for hits in found[4:]} == {"conv-000000"}
        made = bench.search_figure(store, floor, 2000, "granted", 3, warmup=1)
        assert made.id == "search.granted@2e+03" and made.ratio is not None and made.ratio > 0
        store.close()
        floor.close()
        """,
        tmp_path,
    )


def test_recorder_logs_the_store_calls_only_while_recording(tmp_path: Path) -> None:
    """The recording connection comes through the store's public seams and logs each call as made:
    nothing outside ``recording``, ``executemany`` as one call with its rows materialized."""
    run_isolated(
        """
        import sys
        from pathlib import Path
        import convledger_bench as bench

        work = Path(sys.argv[1])
        store, connection = bench.recording_store(work / "recorded.sqlite")
        assert isinstance(connection, bench.RecordingConnection)
        store.append("c", [bench.draft(1)])
        assert connection.log == []
        with bench.recording(connection) as recorder:
            store.append("c", [bench.draft(2), bench.draft(3)])
            log = recorder.take()
            assert store.head("c") == 3
            reads = recorder.take()
        store.append("c", [bench.draft(4)])
        assert connection.log == []
        assert [(how, sql.split()[0]) for how, sql, _ in log][0] == ("execute", "BEGIN")
        assert log[-1] == ("execute", "COMMIT", ())
        insert, indexed = [entry for entry in log if entry[0] == "executemany"]
        assert insert[1].startswith("INSERT INTO events ") and len(insert[2]) == 2
        assert indexed[1].startswith("INSERT INTO search_pending ") and len(indexed[2]) == 2
        assert all(isinstance(row, tuple) for row in insert[2])
        assert [row[1] for row in insert[2]] == [2, 3]
        assert reads and all(how == "execute" for how, _, _ in reads)
        reopened = store.reopen()
        assert reopened.head("c") == 4
        reopened.close()
        """,
        tmp_path,
    )


def test_suite_packages_do_not_import_the_harness() -> None:
    """``convledger`` and ``convledger_conformance`` never import ``convledger_bench``, except
    the suite CLI's lazy import inside ``_bench`` (``--bench``) and the ``bench`` subcommand's
    (inside its functions; its names for annotations under ``TYPE_CHECKING``)."""
    import ast

    root = Path(__file__).resolve().parents[1]
    found = []
    for package in (root / "reference" / "convledger", root / "conformance"):
        for path in sorted(package.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
            for node in ast.walk(tree):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(name.split(".")[0] == "convledger_bench" for name in names):
                    inside = [f.name for f in functions if f.lineno <= node.lineno <= (
                        f.end_lineno or f.lineno)]
                    found.append((path.relative_to(root).as_posix(), inside))
    lazy = {("conformance/convledger_conformance/cli.py", ("_bench",))}
    # ``bench`` (issue 34): inside its functions, and for annotations only (TYPE_CHECKING)
    command = "conformance/convledger_conformance/bench_command.py"
    for path, inside in found:
        if path == command and not inside:
            line = next(n for n in ast.walk(ast.parse((root / path).read_text("utf-8")))
                        if isinstance(n, ast.If) and isinstance(n.test, ast.Name))
            assert line.test.id == "TYPE_CHECKING"  # type: ignore[attr-defined]
    assert {(path, tuple(inside)) for path, inside in found if path != command} == lazy, found
    assert {path for path, _ in found} == {path for path, _ in lazy} | {command}, found


def test_cli_bench_runs_the_harness_lazily_and_says_when_it_is_missing(tmp_path: Path) -> None:
    """``--bench`` writes the figures (here with a tiny plan, to stay fast), the suite CLI does
    not import the harness before, and without it ``--bench`` exits 2 naming it."""
    run_isolated(
        """
        import contextlib, io, json, sys
        from pathlib import Path
        from convledger_conformance import cli

        assert "convledger_bench" not in sys.modules
        import convledger_bench.run

        class Tiny(convledger_bench.Plan):
            @classmethod
            def of(cls, *, quick, sizes=None):
                assert quick
                return cls((1000, 2000), append_rounds=3, batch_rounds=2, read_rounds=3,
                           export_rounds=2, warmup=1, search_rounds=4)

        convledger_bench.run.Plan = Tiny
        target = Path(sys.argv[1]) / "figures.json"
        with contextlib.redirect_stdout(io.StringIO()) as table:
            assert cli.main(["--bench", "--json", str(target)]) == 0
        figures = {item["figure"]: item for item in json.loads(target.read_text())["figures"]}
        assert "read.page100@1e+03" in figures and "append.single@1e+03" in figures, figures
        assert all(item["store_median"] > 0 for item in figures.values())
        assert "append.single@1e+03" in table.getvalue()

        sys.modules["convledger_bench"] = None  # as if the harness were not installed
        with contextlib.redirect_stderr(io.StringIO()) as errors:
            assert cli.main(["--bench"]) == 2
        assert "convledger_bench" in errors.getvalue(), errors.getvalue()
        """,
        tmp_path,
    )


def test_search_is_not_measured_for_a_store_without_the_capability(tmp_path: Path) -> None:
    """A store that does not declare search gets no search figure (it is listed as skipped)."""
    run_isolated(
        """
        from convledger.memory import MemoryStore
        from convledger.capabilities import Capability
        import convledger_bench as bench

        store = MemoryStore()
        assert Capability.SEARCH not in store.capabilities
        assert bench.searchable(store) is None
        store.close()
        """,
        tmp_path,
    )


def test_interleave_rotates_the_first_contender_and_drops_warmup(tmp_path: Path) -> None:
    """Round r starts with the r-th contender; warmup rounds leave no sample."""
    run_isolated(
        """
        import convledger_bench as bench

        order = []
        samples = bench.interleave(
            {name: (lambda name=name: order.append(name)) for name in "abc"}, rounds=3, warmup=1
        )
        assert order == list("abc" "bca" "cab" "abc"), order
        assert {name: len(values) for name, values in samples.items()} == {"a": 3, "b": 3, "c": 3}
        """,
        tmp_path,
    )


def test_figure_ratio_is_floor_median_over_store_median(tmp_path: Path) -> None:
    """A store twice as slow as its floor has ratio 0.5 and a rate from its own median."""
    run_isolated(
        """
        import convledger_bench as bench

        made = bench.figure("x", "x", {"store": [2.0] * 3, "floor": [1.0] * 3}, events=4)
        assert made.ratio == 0.5 and made.rate == 2.0, made
        """,
        tmp_path,
    )


def write_run(path: Path, figures: dict[str, dict[str, float | None]]) -> None:
    """A pytest-benchmark JSON holding the given figures in ``extra_info``."""
    entries = [
        {"extra_info": {"figure": name, "store_spread": 0.0, "floor_spread": 0.0, **info}}
        for name, info in figures.items()
    ]
    path.write_text(json.dumps({"benchmarks": entries}), encoding="utf-8")


def test_gate_fails_a_ratio_below_budget_and_passes_one_above(tmp_path: Path) -> None:
    """A ratio below its minimum is a breach; at or above it passes."""
    gate = load_gate()
    budgets = [{"figure": "read", "kind": "ratio", "minimum": 0.7, "target": 0.8}]
    run = tmp_path / "run.json"
    write_run(run, {"read": {"ratio": 0.69}})
    assert gate.judge(budgets, gate.figures_of(run), quick=True)[1] is False
    write_run(run, {"read": {"ratio": 0.75}})
    rows, passed = gate.judge(budgets, gate.figures_of(run), quick=True)
    assert passed is True
    assert rows[0][-1] == "ok, below target"


def test_gate_gates_rates_only_outside_quick(tmp_path: Path) -> None:
    """An absolute rate below its minimum fails the full gate and is only reported by --quick."""
    gate = load_gate()
    budgets = [{"figure": "memory", "kind": "rate", "minimum": 100.0, "target": 100.0}]
    run = tmp_path / "run.json"
    write_run(run, {"memory": {"rate": 50.0, "ratio": None}})
    assert gate.judge(budgets, gate.figures_of(run), quick=True)[1] is True
    assert gate.judge(budgets, gate.figures_of(run), quick=False)[1] is False


def test_gate_fails_a_missing_figure_unless_declared_unmeasurable(tmp_path: Path) -> None:
    """A budget whose figure did not run is a breach, unless the budget says why it cannot."""
    gate = load_gate()
    run = tmp_path / "run.json"
    write_run(run, {})
    missing = [{"figure": "x", "kind": "ratio", "minimum": 1.0}]
    assert gate.judge(missing, gate.figures_of(run), quick=True)[1] is False
    excused = [{**missing[0], "unmeasurable": "not landed"}]
    assert gate.judge(excused, gate.figures_of(run), quick=True)[1] is True


def test_gate_excuses_missing_postgres_figures_outside_ci_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``requires = "postgres"`` figure missing passes outside CI and is a breach in CI."""
    gate = load_gate()
    run = tmp_path / "run.json"
    write_run(run, {})
    budgets = [{"figure": "postgres.x", "kind": "ratio", "minimum": 1.0, "requires": "postgres"}]
    monkeypatch.setenv("CI", "false")
    assert gate.judge(budgets, gate.figures_of(run), quick=True)[1] is True
    monkeypatch.setenv("CI", "true")
    assert gate.judge(budgets, gate.figures_of(run), quick=True)[1] is False


def test_gate_judges_a_remeasured_figure_by_the_better_run(tmp_path: Path) -> None:
    """After a breach the gate keeps each figure's higher value of the two runs."""
    gate = load_gate()
    budgets = [{"figure": "read", "kind": "ratio", "minimum": 0.7}]
    first, second = tmp_path / "one.json", tmp_path / "two.json"
    write_run(first, {"read": {"ratio": 0.5}, "other": {"ratio": 0.9}})
    write_run(second, {"read": {"ratio": 0.8}, "other": {"ratio": 0.1}})
    merged = gate.better_of(budgets, gate.figures_of(first), gate.figures_of(second))
    assert merged["read"]["ratio"] == 0.8 and merged["other"]["ratio"] == 0.9
    assert gate.judge(budgets, merged, quick=True)[1] is True


def test_committed_budgets_name_known_figures_with_sane_thresholds() -> None:
    """Every budget in budgets.toml has a known kind, a positive minimum, and a spread note."""
    import tomllib

    budgets = tomllib.loads((GATE.parent / "budgets.toml").read_text(encoding="utf-8"))["budget"]
    assert budgets
    for budget in budgets:
        assert budget["kind"] in {"ratio", "rate"}
        assert float(budget["minimum"]) > 0
        assert budget["spread"]
