"""``convledger demo`` end to end, in a subprocess (chapters PRV and FCT)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from convledger.sqlite import SqliteStore


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convledger", "demo", *args],
        capture_output=True, text=True, check=False, timeout=120,
    )


def test_demo_prints_the_ledger_and_writes_the_archive(tmp_path: Path) -> None:
    """The demo exits 0, prints every fact kind it promises and writes a re-importable archive."""
    database = tmp_path / "demo.sqlite"
    result = _demo("--db", str(database))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for kind in ("retry/scheduled", "retry/started", "provider/request", "provider/message",
                 "provider/response", "state/set", "schedule/late", "schedule/fired",
                 "child/spawned", "sandbox/probed"):
        assert kind in out
    assert "child demo-child-research: spawned -> running -> finished" in out
    assert "child demo-child-booking: spawned -> stopped" in out
    assert "reason=success" in out and "reason=cancelled" in out
    assert "conversations: demo, demo-child-research, demo-child-booking " in out
    archive = tmp_path / "demo-archive.json"
    assert f"archive written to {archive}" in out
    document = json.loads(archive.read_bytes())
    kinds = [event["kind"] for event in document["events"]]
    assert kinds.index("schedule/late") + 1 == kinds.index("schedule/fired")
    fresh = SqliteStore(tmp_path / "again.sqlite")
    try:
        fresh.import_conversation(archive.read_bytes())
        assert fresh.export_conversation("demo") == archive.read_bytes()
    finally:
        fresh.close()


def test_demo_refuses_a_database_that_holds_it(tmp_path: Path) -> None:
    """A second demo on the same database exits 1 and leaves the ledger as it was."""
    database = tmp_path / "demo.sqlite"
    assert _demo("--db", str(database)).returncode == 0
    archive = (tmp_path / "demo-archive.json").read_bytes()
    again = _demo("--db", str(database))
    assert again.returncode == 1
    store = SqliteStore(database)
    try:
        assert store.export_conversation("demo") == archive
    finally:
        store.close()
