"""``scripts/mutation.py``: mutants are made and applied as listed, triage marks equivalents.

The default tests never run the suite (the script's own runs take tens of
minutes); the one ``slow`` test runs it end to end on two mutants of
``batch.py`` with one check: one the check kills, one triaged as equivalent.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from convledger.errors import InvalidInputError

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mutation.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_script"] = module
    spec.loader.exec_module(module)
    return module


mutation = _script()
BATCH = "convledger/batch.py"


def _mutant(module: str, line_text: str, description: str) -> object:
    found = [
        m for m in mutation.mutants_of(module) if m.text == line_text and m.mutation == description
    ]
    assert len(found) == 1, found
    return found[0]


def test_mutants_are_listed_in_a_fixed_order_and_each_compiles() -> None:
    first = mutation.mutants_of(BATCH)
    assert first == mutation.mutants_of(BATCH)
    assert [m.ordinal for m in first] == list(range(len(first)))
    clear = compile((mutation.REFERENCE / BATCH).read_text("utf-8"), BATCH, "exec")
    for mutant in first:
        code = mutation.mutated_code(BATCH, mutant.ordinal)
        assert code.co_code != clear.co_code or code.co_consts != clear.co_consts, mutant


def test_no_mutant_in_docstrings_annotations_or_strings() -> None:
    mutants = mutation.mutants_of("convledger/replay.py")
    # replay.py: two tests negated, two returns made None; its messages and docs untouched
    assert sorted(m.operator for m in mutants) == [
        "negate-test",
        "negate-test",
        "return-none",
        "return-none",
    ]


def test_the_import_hook_serves_the_mutant_and_the_mutant_changes_behaviour() -> None:
    mutant = _mutant(
        BATCH,
        "if value < minimum or (maximum is not None and value > maximum):",
        "`>` -> `>=`",
    )
    code = mutation.mutated_code(BATCH, mutant.ordinal)
    finder = mutation._MutantFinder("mutation_probe_batch", mutation.REFERENCE / BATCH, code)
    sys.meta_path.insert(0, finder)
    try:
        probe = importlib.import_module("mutation_probe_batch")
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("mutation_probe_batch", None)
    from convledger import batch

    assert batch.check_count(5, "n", "LED-005", minimum=0, maximum=5) == 5
    with pytest.raises(InvalidInputError):
        probe.check_count(5, "n", "LED-005", minimum=0, maximum=5)


def test_import_time_lines_select_every_check_and_others_only_those_executing_them() -> None:
    m = mutation.Mutant(BATCH, 0, 10, 11, "int", "`1` -> `2`", "x = 1", 0)
    cover = {
        "checks": {
            "fast": {"status": "passed", "duration": 0.1},
            "slow": {"status": "passed", "duration": 2.0},
            "skipped": {"status": "not_applicable", "duration": 0.0},
        },
        "lines": {"fast": {BATCH: [11]}, "slow": {BATCH: [10, 40]}, "skipped": {BATCH: [10]}},
    }
    assert mutation.selected_checks(m, cover) == ["fast", "slow"]
    elsewhere = mutation.Mutant(BATCH, 1, 40, 40, "int", "`1` -> `2`", "y = 1", 0)
    assert mutation.selected_checks(elsewhere, cover) == ["slow"]
    cover["lines"][mutation.IMPORT_BUCKET] = {BATCH: [11]}
    assert mutation.selected_checks(m, cover) == ["fast", "slow"]
    nowhere = mutation.Mutant(BATCH, 2, 99, 99, "int", "`1` -> `2`", "z = 1", 0)
    assert mutation.selected_checks(nowhere, cover) == []


def test_triage_marks_survivors_equivalent_and_reports_stale_entries(tmp_path: Path) -> None:
    triage = tmp_path / "triage.toml"
    triage.write_text(
        '[[equivalent]]\nfile = "convledger/batch.py"\nline = "a = 1"\n'
        'mutation = "`1` -> `2`"\nreason = "never read"\n'
        '[[equivalent]]\nfile = "convledger/batch.py"\nline = "b = 1"\n'
        'mutation = "`1` -> `2`"\nreason = "wrong: it is killed"\n',
        "utf-8",
    )
    entries = mutation.load_triage(triage)
    make = mutation.Outcome
    outcomes = [
        make("i1", BATCH, 1, "int", "`1` -> `2`", "a = 1", mutation.SURVIVED),
        make("i2", BATCH, 2, "int", "`1` -> `2`", "b = 1", mutation.KILLED),
        make("i3", BATCH, 3, "int", "`1` -> `2`", "c = 1", mutation.SURVIVED),
        make("i4", BATCH, 4, "int", "`1` -> `2`", "d = 1", mutation.KILLED),
    ]
    mutants = [
        mutation.Mutant(BATCH, n, n + 1, n + 1, "int", "`1` -> `2`", text, 0)
        for n, text in enumerate(["a = 1", "b = 1", "c = 1", "d = 1"])
    ]
    summary = mutation.summarize(outcomes, entries, mutants)
    assert summary["counts"] == {
        "killed": 2, "survived": 1, "timeout": 0, "error": 0, "equivalent": 1
    }
    assert outcomes[0].reason == "never read"
    assert summary["kill_rate"] == pytest.approx(2 / 3)
    assert summary["stale_triage"] == [[BATCH, "b = 1", "`1` -> `2`", 0]]


def test_an_error_is_no_kill_and_is_counted_apart() -> None:
    """A mutant the suite gave no verdict on (import broken, child crashed) is not a kill."""
    make = mutation.Outcome
    outcomes = [
        make("i1", BATCH, 1, "int", "`1` -> `2`", "a = 1", mutation.KILLED),
        make("i2", BATCH, 2, "int", "`1` -> `2`", "b = 1", mutation.ERROR),
    ]
    summary = mutation.summarize(outcomes, {}, [])
    assert summary["counts"]["error"] == 1 and summary["kill_rate"] == pytest.approx(1 / 2)
    assert summary["detected_rate"] == pytest.approx(1.0)


def test_a_seeded_sample_is_reproducible_and_in_walk_order() -> None:
    every = mutation.mutants_of(BATCH)
    first = mutation.sampled(every, 10, 37)
    assert first == mutation.sampled(every, 10, 37) and len(first) == 10
    assert [m.ordinal for m in first] == sorted(m.ordinal for m in first)
    assert first != mutation.sampled(every, 10, 38)
    spread = mutation.sampled(every, 10)
    assert spread[0] == every[0] and len(spread) == 10
    assert mutation.sampled(every, 0, 37) == every


def test_packages_name_their_modules_and_the_store_that_reaches_them() -> None:
    for name in ("runtime", "sqlite", "postgres"):
        modules = mutation.package_modules(name)
        assert modules and all(m.startswith(f"convledger/{name}/") for m in modules)
        assert not any(m.endswith("__init__.py") for m in modules)
    assert mutation.PACKAGES["postgres"][1] == "convledger.postgres:new_schema_store"


def test_a_child_gets_its_own_temporary_folder_removed_after_it() -> None:
    with mutation._child_space("convledger.memory:MemoryStore") as (environment, left):
        folder = Path(environment["TMPDIR"])
        (folder / "leak").write_text("x", "utf-8")
        assert "CONVLEDGER_PG_SCHEMA_PREFIX" not in environment
    assert not folder.exists() and left == ["file leak"]


def test_the_shipped_triage_file_parses_and_gives_every_entry_a_reason() -> None:
    entries = mutation.load_triage(mutation.DEFAULT_TRIAGE)
    assert entries, "the triage file lists the equivalent mutants of the last run"
    assert all(reason.strip() for reason in entries.values())


def test_help_describes_the_run() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True
    )
    assert "--profile" in done.stdout and "equivalent" in done.stdout


@pytest.mark.slow
def test_end_to_end_one_kill_and_one_equivalent(tmp_path: Path) -> None:
    """Two mutants of check_count against one check: one killed, one equivalent."""
    kill = _mutant(
        BATCH,
        "if value < minimum or (maximum is not None and value > maximum):",
        "`>` -> `>=`",
    )
    same = _mutant(
        BATCH,
        'bounds = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"',
        "`is` -> `is not`",
    )
    triage = tmp_path / "triage.toml"
    triage.write_text(
        f"[[equivalent]]\nfile = {json.dumps(BATCH)}\nline = {json.dumps(same.text)}\n"
        f'mutation = {json.dumps(same.mutation)}\nreason = "message text only"\n',
        "utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--modules",
            BATCH,
            "--only",
            kill.ident,
            same.ident,
            "--checks",
            "boundaries_ledger",
            "--out",
            str(tmp_path / "out"),
            "--triage",
            str(triage),
            "--nice",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    statuses = {item["ident"]: item["status"] for item in report["mutants"]}
    assert statuses == {kill.ident: "killed", same.ident: "equivalent"}
    assert "message text only" in (tmp_path / "out" / "report.md").read_text("utf-8")
    ast.parse(SCRIPT.read_text("utf-8"))


def test_a_postgres_child_gets_its_own_schema_prefix_dropped_after_it(pg_dsn: str) -> None:
    """Schemas a mutant's child leaves (its drop on close broken) are dropped by the parent."""
    import psycopg

    with mutation._child_space("convledger.postgres:new_schema_store") as (environment, left):
        prefix = environment["CONVLEDGER_PG_SCHEMA_PREFIX"]
        assert prefix.startswith(mutation.PG_PREFIX)
        with psycopg.connect(pg_dsn, autocommit=True) as connection:
            connection.execute(
                psycopg.sql.SQL("CREATE SCHEMA {}").format(psycopg.sql.Identifier(prefix + "x"))
            )
    assert left == [f"schema {prefix}x"]
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (prefix + "x",)
        ).fetchone()
    assert row == (0,)


def test_a_larger_seeded_sample_holds_the_smaller() -> None:
    every = mutation.mutants_of(BATCH)
    assert set(mutation.sampled(every, 10, 37)) <= set(mutation.sampled(every, 30, 37))


def test_report_only_reads_the_results_and_runs_nothing(tmp_path: Path) -> None:
    """``--report-only`` reports the results already in OUT, with the triage file as it is."""
    first = mutation.mutants_of(BATCH)[0]
    source = mutation._digest((mutation.REFERENCE / BATCH).read_text("utf-8"))
    outcome = mutation.Outcome(
        first.ident, BATCH, first.line, first.operator, first.mutation, first.text,
        mutation.KILLED, by="a check", source=source,
        extra={"profile": "smoke", "suite": "an earlier suite"},
    )
    (tmp_path / "results.jsonl").write_text(json.dumps(mutation.asdict(outcome)) + "\n", "utf-8")
    code = mutation.main(["--modules", BATCH, "--only", first.ident, "--out", str(tmp_path),
                          "--report-only", "--triage", str(tmp_path / "none.toml")])
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert code == 0 and report["summary"]["counts"]["killed"] == 1
    assert not (tmp_path / "coverage.json").exists()
