"""``convledger-conformance diff`` finds each behaviour the outsiders learned only by probing.

Each server of ``tests/galleries/diff_servers.py`` is the reference wire server
with one behaviour turned against whatever the reference decides (issue 33),
so these tests hold however the spec settles the point: ``diff`` must report a
disagreement of the right family, write a trace that ``replay`` fails on the
server and passes on the reference, and find none between the reference and
``serve-wire --store sqlite``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from convledger.memory import MemoryStore
from convledger.wire.frames import encode_frame
from convledger.wire.server import WireServer
from convledger_conformance.cli import main as cli_main
from convledger_conformance.diff.command import Size
from convledger_conformance.diff.command import main as diff_main
from galleries.diff_servers import other_kind, reference_answer

SERVERS = Path(__file__).parent / "galleries" / "diff_servers.py"
STORE_CASES = Size(cases=2, length=16, sessions=0)
"""Two cases of sixteen chunks: every family of requests at least twice."""
SESSION_CASES = Size(cases=0, length=1, sessions=1)
"""One session case: the two first hellos of HELLOS (no protocol, protocol 1.0)."""


def gallery(*mode: str) -> str:
    return " ".join([sys.executable, str(SERVERS), *mode])


def run(tmp_path: Path, command: str, size: Size) -> tuple[int, dict[str, Any]]:
    report = tmp_path / "report.json"
    code = diff_main(["--command", command, "--seed", "7", "--json", str(report),
                      "--record", str(tmp_path / "traces")], size=size)
    return code, json.loads(report.read_text())


def families(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["family"]: item for item in report["disagreements"]}


def replayed(trace: str, *where: str) -> int:
    return cli_main(["replay", trace, *where])


def test_reply_id_of_a_frame_breaking_wir003(tmp_path: Path) -> None:
    code, report = run(tmp_path, gallery("wir003-id"), STORE_CASES)
    found = families(report)
    assert code == 1 and "tagged" in found, report
    assert found["tagged"]["path"].endswith(".id")
    assert found["tagged"]["steps"] <= 3  # shrunk: hello, (newStore,) the tagged frame
    trace = found["tagged"]["trace"]
    assert replayed(trace, "--command", gallery("wir003-id")) == 1
    assert replayed(trace, "--store", "convledger.memory:MemoryStore") == 0


def test_callback_ids_numbered_differently(tmp_path: Path) -> None:
    code, report = run(tmp_path, gallery("callback-ids"), STORE_CASES)
    found = families(report)
    assert code == 1 and "spills" in found, report
    assert found["spills"]["path"].endswith(".callback")
    assert found["spills"]["ids"][:1] == ["WIR-016"]


def _refused(frame: dict[str, Any]) -> bool:
    (reply,) = reference_answer(encode_frame(frame))
    return "error" in reply


def test_draft_member_outside_the_six(tmp_path: Path) -> None:
    draft = {"eventId": "e", "kind": "state/set", "occurredAt": "2024-05-01T12:00:00Z",
             "payload": {"name": "s", "version": 1, "value": 1, "actor": "a"},
             "schemaVersion": 1, "ignorable": False, "extra": 1}
    refused = _refused({"id": 1, "op": "append",
                        "args": {"store": 1, "conversationId": "c", "drafts": [draft]}})
    code, report = run(tmp_path, gallery("draft-member", "ignore" if refused else "refuse"),
                       STORE_CASES)
    assert code == 1 and "draft-member" in families(report), report


def test_request_members_beyond_id_op_args(tmp_path: Path) -> None:
    refused = _refused({"id": 1, "op": "head", "extra": 1,
                        "args": {"store": 1, "conversationId": "c"}})
    code, report = run(tmp_path, gallery("request-member", "ignore" if refused else "refuse"),
                       STORE_CASES)
    assert code == 1 and "extra-member" in families(report), report


def _hello_answer(args: dict[str, Any]) -> str:
    (reply,) = WireServer(MemoryStore).answer_frames(
        encode_frame({"id": 1, "op": "hello", "args": args}))
    return "ok" if "ok" in reply else str(reply["error"]["kind"])


def _other(answer: str) -> str:
    return "not_supported" if answer == "ok" else other_kind(answer)


@pytest.mark.parametrize("which", ["absent", "float"])
def test_hello_without_protocol_or_with_a_float(tmp_path: Path, which: str) -> None:
    absent, as_float = _hello_answer({}), _hello_answer({"protocol": 1.0})
    options = [_other(absent), as_float] if which == "absent" else [absent, _other(as_float)]
    code, report = run(tmp_path, gallery("hello", *options), SESSION_CASES)
    assert code == 1 and "hello" in families(report), report
    sent = json.loads(Path(families(report)["hello"]["trace"]).read_text())
    first = sent["traces"][0]["steps"][0]["send"]
    assert ("protocol" not in first["args"]) if which == "absent" else (
        first["args"]["protocol"] == {"$float": "1.0"})


def test_archive_format_version_of_another_type(tmp_path: Path) -> None:
    code, report = run(tmp_path, gallery("format-version"), STORE_CASES)
    found = families(report)
    assert code == 1 and "archive" in found, report
    assert "ARC-002" in found["archive"]["ids"]


def test_no_disagreement_with_the_sqlite_server(tmp_path: Path) -> None:
    command = f"{sys.executable} -m convledger serve-wire --store sqlite"
    code, report = run(tmp_path, command, Size(cases=2, length=16, sessions=4))
    assert (code, report["disagreements"]) == (0, [])
    assert report["steps"] > 60
    assert {"transitions", "projections", "spills"} <= set(report["capabilities"])


def test_exit_codes_for_usage_and_a_server_that_does_not_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        diff_main(["--profile", "smoke"])
    assert usage.value.code == 2
    assert diff_main(["--command", str(tmp_path / "no-such-server")]) == 3
    assert "cannot start" in capsys.readouterr().err


def test_a_store_in_process_against_the_sqlite_reference(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    code = diff_main(["--store", "convledger.memory:MemoryStore", "--reference", "sqlite",
                      "--seed", "5", "--json", str(report)], size=Size(cases=1, length=16,
                                                                       sessions=0))
    found = json.loads(report.read_text())
    assert (code, found["disagreements"], found["reference"]) == (0, [], "reference-sqlite")
    assert found["steps"] > 16
