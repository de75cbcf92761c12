"""The reference tools as real subprocesses: ``convledger canon`` (CAN-015), ``verify`` (ARC-015).

Exit codes are those of ``convledger.cli``: 0 success, 1 problems found,
2 refused input, 3 unreadable file.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import archive_bytes, draft, wire_event
from convledger.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "spec" / "vectors" / "canonical" / "cases.json"


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "convledger", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


# -- canon ---------------------------------------------------------------------------


def test_canon_prints_exact_bytes_of_a_file(tmp_path: Path) -> None:
    """CAN-015: canon prints the canonical bytes, no trailing newline, and exits 0."""
    path = tmp_path / "doc.json"
    path.write_bytes(b'{ "b": [1.0, 1e21, -0.0], "a": "\\u00e9\\n\\ud83d\\ude00" }\n')
    result = _run("canon", str(path))
    assert result.returncode == 0
    assert result.stdout == '{"a":"é\\n😀","b":[1,1e+21,0]}'.encode()
    assert result.stderr == b""


def test_canon_reads_standard_input() -> None:
    """CAN-015: '-' reads the document from standard input."""
    result = _run("canon", "-", stdin=b'{"z":null,"a":[true,false]}')
    assert (result.returncode, result.stdout) == (0, b'{"a":[true,false],"z":null}')


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xef\xbb\xbf{}", "bom"),
        (b'{"a":1,"a":2}', "duplicate_key"),
        (b"9007199254740993", "integer_out_of_range"),
        (b'"\xff"', "invalid_utf8"),
        (b'"\\ud800"', "lone_surrogate"),
        (b"[NaN]", "non_finite_number"),
        (b'{"a":', "syntax"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_canon_refusal_exits_2_naming_kind_and_reason(data: bytes, reason: str) -> None:
    """CAN-015: a refused document exits 2 with 'invalid_input: REASON (ID): ...' on stderr."""
    result = _run("canon", "-", stdin=data)
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode().startswith(f"invalid_input: {reason} (CAN-")


def test_canon_unreadable_file_exits_3(tmp_path: Path) -> None:
    """A file that cannot be read exits 3."""
    result = _run("canon", str(tmp_path / "missing.json"))
    assert result.returncode == 3
    assert result.stdout == b""
    assert result.stderr


def _vectors_for_the_tool() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(VECTORS.read_text("utf-8"))["cases"]
    return [case for case in cases if "CAN-015" in case["requirements"]]


@pytest.mark.parametrize("case", _vectors_for_the_tool(), ids=lambda case: case["name"])
def test_canon_satisfies_vectors(case: dict[str, Any]) -> None:
    """CAN-015: the vectors that cite CAN-015 hold through the command line."""
    result = _run("canon", "-", stdin=base64.b64decode(case["input_base64"]))
    if "error" in case:
        assert result.returncode == 2
        assert result.stderr.decode().startswith(
            f"{case['error']['kind']}: {case['error']['reason']} ("
        )
    else:
        assert result.returncode == 0
        assert result.stdout == base64.b64decode(case["canonical_base64"])


# -- verify --------------------------------------------------------------------------


def _exported(tmp_path: Path) -> Path:
    store = MemoryStore()
    store.append("conv", [draft("a"), draft("b", value=[1.5, "é"])])
    path = tmp_path / "archive.json"
    path.write_bytes(store.export_conversation("conv"))
    return path


def _three_problems(tmp_path: Path) -> Path:
    """An archive with a seq gap, a foreign conversationId and a duplicate eventId."""
    events = [
        wire_event(1),
        wire_event(2, conversation_id="other"),
        wire_event(4),
        wire_event(5, event_id="e1"),
    ]
    path = tmp_path / "bad.json"
    path.write_bytes(archive_bytes(events))
    return path


def test_verify_valid_archive_exits_0(tmp_path: Path) -> None:
    """ARC-015: an exported archive verifies with no problem and exit status 0."""
    result = _run("verify", str(_exported(tmp_path)))
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 1
    assert "valid archive" in lines[0]


def test_verify_lists_every_problem(tmp_path: Path) -> None:
    """ARC-015: all three problems are listed, one per line with path, kind and id; exit 1."""
    result = _run("verify", str(_three_problems(tmp_path)))
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    heads = [" ".join(line.split(" ")[:3]) for line in lines[:3]]
    assert heads == [
        "/events/1/conversationId: invalid_input (ARC-006):",
        "/events/2/seq: invalid_input (ARC-007):",
        "/events/3/eventId: invalid_input (ARC-008):",
    ]
    assert len(lines) == 4
    assert "3 problems" in lines[3]


def test_verify_json_report(tmp_path: Path) -> None:
    """ARC-015: --json prints one JSON report with every problem; exit 1."""
    result = _run("verify", "--json", str(_three_problems(tmp_path)))
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["valid"] is False
    assert [(p["where"], p["kind"], p["requirement"]) for p in report["problems"]] == [
        ("/events/1/conversationId", "invalid_input", "ARC-006"),
        ("/events/2/seq", "invalid_input", "ARC-007"),
        ("/events/3/eventId", "invalid_input", "ARC-008"),
    ]
    assert all(problem["message"] for problem in report["problems"])


def test_verify_json_report_of_valid_archive(tmp_path: Path) -> None:
    """ARC-015: --json on a valid archive reports it valid with its conversation; exit 0."""
    result = _run("verify", "--json", str(_exported(tmp_path)))
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert (report["valid"], report["conversationId"], report["events"]) == (True, "conv", 2)
    assert report["problems"] == []


def test_verify_undecodable_file(tmp_path: Path) -> None:
    """ARC-003, ARC-015: bytes that are not JSON are one problem of the document; exit 1."""
    path = tmp_path / "truncated.json"
    path.write_bytes(_exported(tmp_path).read_bytes()[:-1])
    result = _run("verify", str(path))
    assert result.returncode == 1
    assert result.stdout.decode().startswith("(document): invalid_input (CAN-010):")


def test_verify_unreadable_file_exits_3(tmp_path: Path) -> None:
    """A file that cannot be read exits 3."""
    result = _run("verify", str(tmp_path / "missing.json"))
    assert result.returncode == 3
    assert result.stderr


def test_command_table_names_each_subcommand_of_its_module() -> None:
    """COMMANDS (issue 34: a command line imports its subcommand's module alone) is complete."""
    import argparse
    import importlib

    from convledger.cli import COMMANDS, SUBCOMMANDS, build_parser

    registered: dict[str, str] = {}
    for module in SUBCOMMANDS:
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(subparsers)
        registered.update(dict.fromkeys(subparsers.choices, module))
    assert registered == COMMANDS
    for command in COMMANDS:
        action = next(a for a in build_parser(command)._actions
                      if isinstance(a, argparse._SubParsersAction))
        assert command in action.choices


def test_canon_process_imports_no_store() -> None:
    """``python -m convledger canon`` imports neither a store nor the archive (issue 34)."""
    probe = ("import sys\n"
             "from convledger.cli import main\n"
             "main(['canon', '-'])\n"
             "print(sorted(m for m in sys.modules if m in ('convledger.memory', "
             "'convledger.archive', 'convledger.sqlite')), file=sys.stderr)")
    ran = subprocess.run([sys.executable, "-c", probe], input=b'{"b":1,"a":2}',
                         capture_output=True, check=True)
    assert ran.stdout == b'{"a":2,"b":1}'
    assert ran.stderr.strip() == b"[]"
