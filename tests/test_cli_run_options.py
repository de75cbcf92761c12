"""The run options of ``convledger-conformance`` (issue 19), tried as a user would.

Real subprocesses of the console script, run from a temporary directory:
``--version``, ``--store`` from the working directory, ``-k`` and
``--chapter``, ``--seed`` and the reproduction command of a failed check,
``--require``, the fresh-store check (CAP-005) and ``replay``. The broken
stores are :class:`test_conformance_cli.SkippingStore` and the gallery's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import convledger
from convledger import MemoryStore
from convledger.store import Capability
from convledger_conformance import run_suite
from convledger_conformance.cli import main
from convledger_conformance.registry import all_checks
from convledger_conformance.runner import FRESH_CHECK
from convledger_conformance.selection import (
    SelectionError,
    chapters_of,
    keyword_for,
    keyword_predicate,
    select,
)
from convledger_conformance.vectors.traces import replay
from test_readme import _section_code

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def cli(
    arguments: Sequence[str], cwd: Path, *, path: bool = True,
    script: str = "convledger-conformance",
) -> subprocess.CompletedProcess[str]:
    """Run a console script in ``cwd``; ``path`` puts tests/ (the broken stores) on PYTHONPATH."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if path:
        environment["PYTHONPATH"] = f"{HERE}{os.pathsep}{HERE / 'galleries'}"
    return subprocess.run(
        [str(BIN / script), *arguments], cwd=cwd, env=environment, capture_output=True,
        text=True, timeout=600, check=False,
    )


def test_version_of_both_commands(tmp_path: Path) -> None:
    """--version prints the one version (convledger.__version__) and the spec's, exit 0."""
    for script in ("convledger", "convledger-conformance"):
        result = cli(["--version"], tmp_path, script=script)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == (
            f"{script} {convledger.__version__} (spec {convledger.SPEC_VERSION})")


def test_store_from_the_working_directory_with_seed_and_counts(tmp_path: Path) -> None:
    """The README's --store mystore:make_store finds ./mystore.py as written; the seed is reported.

    The progress line counts what the summary counts, and no .hypothesis folder
    appears in the working directory.
    """
    (tmp_path / "mystore.py").write_text(_section_code("Validate your own store"), "utf-8")
    result = cli(["--store", "mystore:make_store", "--profile", "smoke", "-k", "canonical",
                  "--seed", "3", "--json", "r.json"], tmp_path, path=False)
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["suite"]["seed"] == 3
    summary = result.stdout.splitlines()[-1]
    assert ", seed 3: " in summary
    totals = {int(total) for total in re.findall(r"conformance \[\d+/(\d+)\]", result.stderr)}
    assert totals == {len(document["checks"])}
    assert f"({len(document['checks'])} checks in" in summary
    names = [entry["name"] for entry in document["checks"]]
    assert names[:2] == ["capability_declaration", FRESH_CHECK]
    assert all("canonical" in name for name in names[2:]) and len(names) > 2
    assert not (tmp_path / ".hypothesis").exists()
    assert (Path.home() / ".cache" / "convledger" / "hypothesis").is_dir() or os.environ.get(
        "XDG_CACHE_HOME")


def test_without_seed_one_is_drawn_printed_and_reported(tmp_path: Path) -> None:
    """A run without --seed prints the seed it drew; the JSON report carries the same one."""
    result = cli(["--store", "convledger.memory:MemoryStore", "--profile", "smoke",
                  "-k", "declaration_taken", "--json", "r.json"], tmp_path)
    assert result.returncode == 0, result.stderr
    drawn = re.search(r"seed (\d+) \(repeat with --seed \1\)", result.stderr)
    assert drawn is not None, result.stderr
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["suite"]["seed"] == int(drawn.group(1))


def test_failed_check_prints_a_command_that_reproduces_it(tmp_path: Path) -> None:
    """The reproduction command of a failed check runs it alone and fails it the same way."""
    store = "test_conformance_cli:SkippingStore"
    first = cli(["--store", store, "--profile", "smoke", "--seed", "11", "-k", "read_windows",
                 "--no-shrink", "--json", "first.json"], tmp_path)
    assert first.returncode == 1, first.stderr
    document = json.loads((tmp_path / "first.json").read_text("utf-8"))
    failed = [entry for entry in document["checks"] if entry["status"] == "failed"]
    assert [entry["name"] for entry in failed] == ["read_windows"]
    command = failed[0]["reproduce"]
    assert f"Reproduce this check alone: {command}" in first.stdout
    words = shlex.split(command)
    assert words[0] == "convledger-conformance"
    assert words[words.index("--seed") + 1] == "11" and "--store" in words
    again = cli([*words[1:], "--json", "again.json"], tmp_path)
    assert again.returncode == 1, again.stderr
    repeated = json.loads((tmp_path / "again.json").read_text("utf-8"))
    twice = [entry for entry in repeated["checks"] if entry["status"] == "failed"]
    assert [(e["name"], e["message"]) for e in twice] == [("read_windows", failed[0]["message"])]


def test_keyword_expressions() -> None:
    """-k: words are case-insensitive substrings; and, or, not, parentheses; bad ones refused."""
    names = ["ledger_state_machine", "ledger_state_machine_with_reopen", "read_windows",
             "purge_machine"]

    def chosen(expression: str) -> list[str]:
        matches = keyword_predicate(expression)
        return [name for name in names if matches(name)]

    assert chosen("READ") == ["read_windows"]
    assert chosen("machine and not reopen") == [
        "ledger_state_machine", "purge_machine"]
    assert chosen("not (machine or windows)") == []
    assert chosen("purge or windows") == ["read_windows", "purge_machine"]
    for bad in ("", "and", "(read", "read )", "read or", "a $ b"):
        with pytest.raises(SelectionError):
            keyword_predicate(bad)
    alone = keyword_for("ledger_state_machine", names)
    assert chosen(alone) == ["ledger_state_machine"]


def test_chapter_selection() -> None:
    """--chapter keeps exactly the checks covering an id of the chapters; unknown ones refused."""
    known = {"CAN", "LED", "TRN"}
    assert chapters_of("can, led", known) == {"CAN", "LED"}
    with pytest.raises(SelectionError):
        chapters_of("XYZ", known)
    every = list(all_checks())
    kept = select(every, chapters=frozenset({"CAN"}))
    assert kept == [item for item in every if any(i.startswith("CAN-") for i in item.ids)]
    assert kept
    with pytest.raises(SelectionError):
        select(every, keyword="no_check_has_this_name")


@pytest.mark.parametrize(
    "arguments",
    [["--chapter", "XYZ"], ["-k", "no_check_has_this_name"], ["-k", "(read"],
     ["--seed", "1", "--derandomize"], ["--require", "telepathy"],
     ["replay", "no-such-trace.json"]],
    ids=["chapter", "selects-nothing", "bad-expression", "seed-derandomize", "require",
         "replay-missing-file"],
)
def test_usage_errors_of_the_new_options(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each is a usage error (exit 2) with a message, before any store is made."""
    with pytest.raises(SystemExit) as raised:
        main(arguments)
    assert raised.value.code == 2
    captured = capsys.readouterr()
    assert "error:" in captured.err and not captured.out


def test_require_exits_5_when_a_capability_is_not_declared(tmp_path: Path) -> None:
    """--require search on a store without search: one line naming it, exit 5, nothing run."""
    result = cli(["--store", "convledger.memory:MemoryStore", "--require", "transitions,search"],
                 tmp_path)
    assert result.returncode == 5
    assert result.stderr.strip().splitlines() == [
        "convledger-conformance: --require: the store does not declare search (it declares "
        "fact_rows, ledger, projections, purge, spills, transitions)"]
    assert not result.stdout


def test_not_applicable_line_names_the_capabilities_behind_it() -> None:
    """The closing lines count the not_applicable ids and name the undeclared capabilities."""
    chosen = [item for item in all_checks()
              if "CAP-002" in item.ids or item.name == "children_fate_table"]
    report = run_suite(LedgerOnly, profile="smoke", checks=chosen, seed=1)
    last = report.render().splitlines()[-1]
    count = report.summary["not_applicable"]
    assert count > 0
    assert last.startswith(f"{count} requirements not_applicable: capabilities not declared: ")
    assert "transitions" in last


class LedgerOnly(MemoryStore):
    """The reference in-memory store, declaring the ledger core alone."""

    declared = frozenset({Capability.LEDGER})


def test_a_store_that_is_not_fresh_stops_the_run_with_exit_4(tmp_path: Path) -> None:
    """serve-wire --db PATH shares one file between stores: one line, exit 4, nothing else run."""
    server = f"{BIN / 'convledger'} serve-wire --store sqlite --db {tmp_path / 'shared.db'}"
    result = cli(["--command", server, "--profile", "smoke", "--json", "r.json"], tmp_path)
    assert result.returncode == 4, result.stderr
    told = [line for line in result.stderr.splitlines() if not line.startswith("conformance [")]
    assert len(told) == 2 and "seed" in told[0], result.stderr
    assert "stopped after check fresh_store (CAP-005)" in told[1]
    assert not result.stdout
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    statuses = {entry["name"]: entry["status"] for entry in document["checks"]}
    assert statuses.pop("capability_declaration") == "passed"
    assert statuses.pop(FRESH_CHECK) == "failed"
    assert set(statuses.values()) == {"not_run"}


def test_fresh_store_check_in_process() -> None:
    """A factory returning one store every time fails fresh_store [CAP-005] and runs no more."""
    shared = MemoryStore()
    closing = shared.close
    shared.close = lambda: None  # type: ignore[method-assign]
    try:
        report = run_suite(lambda: shared, profile="smoke", seed=1)
    finally:
        closing()
    results = {result.name: result for result in report.checks}
    assert results[FRESH_CHECK].failed_ids == ("CAP-005",)
    assert report.status_of("CAP-005") == "failed"
    ran = [r.name for r in report.checks if r.status != "not_run"]
    assert ran == ["capability_declaration", FRESH_CHECK]


@pytest.mark.parametrize("derandomize", [True, False], ids=["derandomized", "seeded"])
def test_record_failures_then_replay(derandomize: bool, tmp_path: Path) -> None:
    """A deterministic bug gets a trace in both modes; ``replay`` fails it and passes the fix."""
    from galleries.ledger import EventIdsUniquePerConversation

    report = run_suite(
        EventIdsUniquePerConversation, profile="smoke", derandomize=derandomize, shrink=False,
        seed=None if derandomize else 5, record_failures=tmp_path / "traces",
        checks=[item for item in all_checks() if item.name == "event_ids_unique_in_store"],
    )
    failed = [result for result in report.checks if result.status == "failed"]
    assert [result.name for result in failed] == ["event_ids_unique_in_store"]
    files = sorted((tmp_path / "traces").glob("*.json"))
    assert len(files) == 1 and f"Trace vector of this failure: {files[0]}" in failed[0].detail
    if derandomize:
        return  # the command is tried once
    broken = "ledger:EventIdsUniquePerConversation"
    refused = cli(["replay", str(files[0]), "--store", broken], tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert ": failed: " in refused.stdout and " step 2 (append)" in refused.stdout
    fixed = cli(["replay", str(files[0]), "--store", "convledger.memory:MemoryStore"], tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert ": passed (" in fixed.stdout


def test_an_aliasing_bug_gets_a_faithful_trace_with_altering_reads(tmp_path: Path) -> None:
    """An aliasing bug (LED-014) is reached by reads with ``alter``: its trace fails on the
    store and passes on the reference (issue 35)."""
    report = run_suite(
        SharesPayloads, profile="smoke", seed=2, record_failures=tmp_path,
        checks=[item for item in all_checks() if item.name == "caller_values_stay_outside"],
    )
    result = next(r for r in report.checks if r.name == "caller_values_stay_outside")
    assert result.status == "failed"
    assert "Trace vector of this failure:" in result.detail, result.detail[-1500:]
    (written,) = tmp_path.iterdir()
    document = json.loads(written.read_text("utf-8"))
    (trace,) = document["traces"]
    assert any(step.get("alter") for step in trace["steps"] if step["op"] == "read")
    assert replay(SharesPayloads, trace) and not replay(MemoryStore, trace)


def test_a_failure_without_trace_form_says_why(tmp_path: Path) -> None:
    """A refusal naming no requirement (ERR-003) has no trace: the detail says why."""
    from first_store import make_unnamed_bug

    report = run_suite(
        make_unnamed_bug, profile="smoke", seed=2, record_failures=tmp_path,
        checks=[item for item in all_checks() if item.name == "errors_name_requirements"],
    )
    result = next(r for r in report.checks if r.name == "errors_name_requirements")
    assert result.status == "failed"
    assert "No trace vector was recorded: no recorded store log reproduces" in result.detail
    assert "Left out of the logs:" in result.detail
    assert not list(tmp_path.iterdir())


class SharesPayloads(MemoryStore):
    """Breaks LED-014: reads hand out the stored envelopes themselves."""

    def _read(self, conversation_id: str, from_seq: int, to_seq: int | None,
              limit: int) -> Any:
        with self._lock:
            ledger = self._ledgers.get(conversation_id, [])
            stop = len(ledger) if to_seq is None else min(len(ledger), to_seq)
            return ledger[from_seq - 1: min(stop, from_seq - 1 + limit)]
