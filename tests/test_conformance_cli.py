"""``convledger-conformance``, run as a real subprocess: reports, exit codes, usage errors.

The broken store below is loaded by the subprocess through ``--store
test_conformance_cli:SkippingStore`` with this directory on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from convledger import MemoryStore
from convledger.envelope import Envelope, EventDraft
from convledger_conformance.cli import DEFAULT_STORE
from convledger_conformance.registry import all_checks
from convledger_conformance.requirements import conformance_ids
from node_kit import built_kit

HERE = Path(__file__).resolve().parent
SCRIPT = Path(sys.executable).with_name("convledger-conformance")


class SkippingStore(MemoryStore):
    """Breaks LED-002: every conversation's first seq is 2, so seq 1 is skipped."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        """Append as the reference does, then move the new envelopes one seq up."""
        placed = super()._append(conversation_id, drafts, expected_head)
        with self._lock:
            ledger = self._ledgers[conversation_id]
            moved = [
                Envelope(
                    schema_version=envelope.schema_version,
                    event_id=envelope.event_id,
                    conversation_id=envelope.conversation_id,
                    seq=envelope.seq + 1,
                    kind=envelope.kind,
                    occurred_at=envelope.occurred_at,
                    payload=envelope.payload,
                    ignorable=envelope.ignorable,
                )
                for envelope in ledger[-len(placed) :]
            ]
            ledger[-len(placed) :] = moved
        return tuple(moved)


def run_cli(
    arguments: Sequence[str], cwd: Path, *, module: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the console script (or ``python -m convledger_conformance``) in ``cwd``."""
    command = [sys.executable, "-m", "convledger_conformance"] if module else [str(SCRIPT)]
    environment = {**os.environ, "PYTHONPATH": str(HERE)}
    return subprocess.run(
        [*command, *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def default_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One smoke run against the default (reference) store, with JSON and JUnit reports."""
    directory = tmp_path_factory.mktemp("default")
    result = run_cli(
        ["--profile", "smoke", "--derandomize", "--json", "r.json", "--junit", "r.xml"], directory
    )
    return result, directory


@pytest.fixture(scope="module")
def broken_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One smoke run against the seq-skipping store, through ``python -m``, unshrunk (fast)."""
    directory = tmp_path_factory.mktemp("broken")
    result = run_cli(
        [
            "--store",
            "test_conformance_cli:SkippingStore",
            "--profile",
            "smoke",
            "--derandomize",
            "--no-shrink",
            "--json",
            "r.json",
        ],
        directory,
        module=True,
    )
    return result, json.loads((directory / "r.json").read_text("utf-8"))


def _failures(document: dict[str, Any]) -> list[str]:
    return [
        f"{entry['name']}: {entry['message']}"
        for entry in document["checks"]
        if entry["status"] == "failed"
    ]


def test_reference_store_passes_with_exit_0(
    default_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The default store passes every check that runs, and the command exits 0."""
    result, directory = default_run
    document = json.loads((directory / "r.json").read_text("utf-8"))
    assert document["summary"]["failed"] == 0, _failures(document)
    assert result.returncode == 0, result.stderr


def test_json_report_shape_and_every_id_once(
    default_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The JSON report has the documented members and lists every active id exactly once."""
    _, directory = default_run
    document = json.loads((directory / "r.json").read_text("utf-8"))
    assert set(document) == {"suite", "store", "capabilities", "requirements", "checks", "summary"}
    assert document["suite"]["name"] == "convledger-conformance"
    assert document["suite"]["profile"] == "smoke"
    assert document["store"] == DEFAULT_STORE
    assert "ledger" in document["capabilities"]
    listed = [entry["id"] for entry in document["requirements"]]
    assert sorted(listed) == sorted(conformance_ids())
    assert len(listed) == len(set(listed))
    statuses = {"passed", "failed", "not_applicable", "not_run"}
    assert {entry["status"] for entry in document["requirements"]} <= statuses
    assert set(document["summary"]) == statuses
    assert sum(document["summary"].values()) == len(listed)
    registered = {item.name for item in all_checks()}
    assert registered <= {entry["name"] for entry in document["checks"]}


def test_junit_report_has_requirement_properties(
    default_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """--junit writes XML with one testcase per check and its requirement ids as properties."""
    _, directory = default_run
    root = ElementTree.parse(directory / "r.xml").getroot()
    cases = list(root.iter("testcase"))
    by_name = {case.get("name"): case for case in cases}
    for item in all_checks():
        properties = [
            prop.get("value")
            for prop in by_name[item.name].iter("property")
            if prop.get("name") == "requirement"
        ]
        assert properties == list(item.ids)


def test_terminal_table_and_summary_line(
    default_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """stdout holds the table grouped by chapter and ends with the summary line."""
    result, _ = default_run
    lines = result.stdout.splitlines()
    assert "ledger.md" in lines
    summary = next(line for line in lines if line.startswith("convledger-conformance "))
    assert lines.index(summary) >= len(lines) - 2  # the summary, then the not_applicable line
    assert "0 failed" in summary
    assert "conformance [1/" in result.stderr


def test_skipping_store_fails_led_002_with_exit_1(
    broken_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    """A store that skips a seq makes the command exit 1 and report LED-002 failed."""
    result, document = broken_run
    assert result.returncode == 1, result.stderr
    status = {entry["id"]: entry["status"] for entry in document["requirements"]}
    assert status["LED-002"] == "failed"
    assert document["store"] == "test_conformance_cli:SkippingStore"
    assert document["suite"]["derandomize"] is True
    assert document["suite"]["shrink"] is False
    failed = [entry for entry in document["checks"] if entry["status"] == "failed"]
    assert all(entry["detail"] for entry in failed)


def test_list_prints_every_check_and_its_ids(tmp_path: Path) -> None:
    """--list prints each registered check with the ids it covers, and exits 0."""
    result = run_cli(["--list"], tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for item in all_checks():
        line = next(line for line in lines if line.startswith(f"{item.name}  "))
        assert line.endswith(" ".join(item.ids))


@pytest.mark.parametrize(
    "arguments",
    [
        ["--store", "no_such_module_anywhere:Store"],
        ["--store", "convledger:NoSuchFactory"],
        ["--store", "convledger:SPEC_VERSION"],
        ["--store", "convledger.memory"],
        ["--profile", "fastest"],
        ["--no-such-option"],
    ],
    ids=["unimportable", "missing-attribute", "not-callable", "no-colon", "profile", "option"],
)
def test_usage_errors_exit_2(arguments: list[str], tmp_path: Path) -> None:
    """A store that cannot be loaded or called, or a bad option, exits 2 without running."""
    result = run_cli(arguments, tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip()
    assert not result.stdout


ROOT = HERE.parent
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not on PATH")
def test_command_runs_the_suite_over_the_wire(tmp_path: Path) -> None:
    """--command checks a store in another process (the Node server) and names it in the report.

    A few checks (``-k``), not the whole suite: tests/test_wire_node.py runs the whole suite
    against this server at smoke, and ``.ci/run`` runs ``--command`` at ci against five
    servers (issue 34).
    """
    built_kit()  # interop/node/server.js runs on the TypeScript kit
    server = f"{NODE} {ROOT / 'interop' / 'node' / 'server.js'}"
    chosen = "wire_frames or archive_round_trip or absent_capabilities_refused"
    result = run_cli(
        ["--command", server, "--profile", "smoke", "--derandomize", "-k", chosen,
         "--json", "r.json"],
        tmp_path,
    )
    document = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert document["summary"]["failed"] == 0, _failures(document)
    ran = {entry["name"] for entry in document["checks"] if entry["status"] == "passed"}
    assert {"wire_frames", "archive_round_trip", "absent_capabilities_refused"} <= ran
    assert result.returncode == 0, result.stderr
    assert server in document["store"]
    assert document["capabilities"] == ["ledger"]


@pytest.mark.parametrize(
    "arguments",
    [
        ["--command", f"{sys.executable} -m convledger serve-wire", "--store", "convledger:x"],
        ["--command", f"{sys.executable} -m convledger serve-wire", "--timeout", "0"],
    ],
    ids=["with-store", "timeout-0"],
)
def test_command_usage_errors_exit_2(arguments: list[str], tmp_path: Path) -> None:
    """Clashing or invalid options of --command exit 2 without running."""
    result = run_cli(arguments, tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip()
    assert not result.stdout


@pytest.mark.parametrize(
    "command",
    ["/nonexistent/convledger-wire-server", f"{sys.executable} -c pass"],
    ids=["missing", "exits-at-once"],
)
def test_server_that_cannot_start_exits_3(command: str, tmp_path: Path) -> None:
    """A server that cannot start or greet: one line naming it, exit 3, no usage banner."""
    result = run_cli(["--command", command], tmp_path)
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot start the store server" in lines[0], result.stderr
    assert "usage:" not in result.stderr
    assert not result.stdout
