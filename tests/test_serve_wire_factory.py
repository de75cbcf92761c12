"""``convledger serve-wire --factory``: the working directory is importable, stores are closed.

Issue 33: the console script ``convledger serve-wire --factory mystore:make``
could not import ``./mystore.py`` (``convledger-conformance --store`` could),
and a server the client stopped left the stores it had made unclosed, so a
PostgreSQL-backed factory left an empty schema per killed server. Now the
working directory comes first on ``sys.path``, the server leaves through its
closing path on SIGTERM, and the suite's client stops a server with SIGTERM
before SIGKILL (after a timeout too). The factory below is a real
:class:`~convledger.memory.MemoryStore` that writes each open and close to a
log file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from convledger.wire.frames import encode_frame, read_frame
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import WireTimeoutError

CONSOLE = Path(sys.executable).with_name("convledger")

TRACKED = '''
import os, time
from convledger.memory import MemoryStore

class Tracked(MemoryStore):
    def __init__(self):
        super().__init__()
        self.tag = os.urandom(4).hex()
        with open(os.environ["TRACK_LOG"], "a") as log:
            log.write(f"open {self.tag}\\n")

    def head(self, conversation_id):
        if conversation_id == "hang":
            time.sleep(60)
        return super().head(conversation_id)

    def close(self):
        with open(os.environ["TRACK_LOG"], "a") as log:
            log.write(f"close {self.tag}\\n")
        super().close()

def make():
    return Tracked()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A directory holding ``tracked.py``, as a user's project would."""
    (tmp_path / "tracked.py").write_text(TRACKED, encoding="utf-8")
    return tmp_path


def _opened_and_closed(log: Path) -> tuple[set[str], set[str]]:
    lines = log.read_text(encoding="utf-8").split()
    pairs = list(zip(lines[::2], lines[1::2], strict=True))
    return ({tag for word, tag in pairs if word == "open"},
            {tag for word, tag in pairs if word == "close"})


def _server(project: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(CONSOLE), "serve-wire", "--factory", "tracked:make"], cwd=project,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env={**os.environ, "TRACK_LOG": str(project / "log")})


def test_the_console_script_imports_a_factory_of_the_working_directory(project: Path) -> None:
    """`convledger serve-wire --factory tracked:make` finds ./tracked.py and serves it."""
    process = _server(project)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(encode_frame({"id": 1, "op": "hello", "args": {"protocol": 1}}))
    process.stdin.flush()
    reply = read_frame(process.stdout)
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    assert "ok" in reply, reply
    opened, closed = _opened_and_closed(project / "log")
    assert opened and opened == closed  # hello's probe store was closed


def test_sigterm_closes_every_store_the_server_made(project: Path) -> None:
    """A server stopped with SIGTERM closes hello's probe and every newStore's store."""
    process = _server(project)
    assert process.stdin is not None and process.stdout is not None
    for ident, op in enumerate(("hello", "newStore", "newStore"), start=1):
        args = {"protocol": 1} if op == "hello" else {}
        process.stdin.write(encode_frame({"id": ident, "op": op, "args": args}))
        process.stdin.flush()
        assert "ok" in read_frame(process.stdout)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    opened, closed = _opened_and_closed(project / "log")
    assert len(opened) == 3 and opened == closed


def test_a_timed_out_server_is_stopped_so_that_it_closes_its_stores(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's timeout stops the server with SIGTERM first: its stores are closed."""
    monkeypatch.chdir(project)
    monkeypatch.setenv("TRACK_LOG", str(project / "log"))
    factory = WireStoreFactory([str(CONSOLE), "serve-wire", "--factory", "tracked:make"],
                               timeout=8.0)
    try:
        store = factory()
        with pytest.raises(WireTimeoutError):
            store.head("hang")
    finally:
        factory.close()
    opened, closed = _opened_and_closed(project / "log")
    assert len(opened) >= 2 and opened == closed


HANGS_ON_EXPORT = '''
import time
from convledger.memory import MemoryStore

class HangsOnExport(MemoryStore):
    def export_conversation(self, conversation_id):
        if isinstance(conversation_id, str) and self.head(conversation_id) > 0:
            time.sleep(60)
        return super().export_conversation(conversation_id)

def make():
    return HangsOnExport()
'''


def test_checks_after_a_dead_server_are_not_run_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: one timeout fails its check; the checks after it are not_run, not failed."""
    from convledger_conformance.registry import all_checks
    from convledger_conformance.report import FAILED, NOT_RUN, PASSED
    from convledger_conformance.runner import run_suite

    (tmp_path / "hangs.py").write_text(HANGS_ON_EXPORT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    wanted = ("append_batch_bounds", "export_is_the_archive", "read_defaults", "head")
    checks = [item for item in all_checks() if item.name in wanted]
    assert len(checks) >= 3
    factory = WireStoreFactory([str(CONSOLE), "serve-wire", "--factory", "hangs:make"],
                               timeout=8.0)
    try:
        report = run_suite(factory, profile="smoke", derandomize=True, checks=checks)
    finally:
        factory.close()
    statuses = [(result.name, result.status, result.message[:200]) for result in report.checks]
    first_failed = next(n for n, (_, status, _) in enumerate(statuses) if status == FAILED)
    assert all(status == PASSED for _, status, _ in statuses[:first_failed]), statuses
    after = report.checks[first_failed + 1:]
    assert after and all(result.status == NOT_RUN for result in after), statuses
    assert all("stopped answering" in result.message for result in after), [
        (result.name, result.message) for result in after]


def test_a_recorded_failure_vector_does_not_hold_the_command_line(tmp_path: Path) -> None:
    """Issue 33: --record-failures names a wire store `wire-command`, never the user's path."""
    from convledger_conformance.registry import all_checks
    from convledger_conformance.runner import run_suite

    tests = Path(__file__).resolve().parent
    command = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tests)!r}); "
               "from convledger.cli import main; "
               "sys.exit(main(['serve-wire', '--factory', 'galleries.gaps:DollarForEnd']))"]
    checks = [item for item in all_checks() if item.name == "schema_patterns_are_ecma_262"]
    folder = tmp_path / "vectors"
    factory = WireStoreFactory(command, timeout=30.0)
    try:
        report = run_suite(factory, profile="smoke", derandomize=True, checks=checks,
                           record_failures=folder)
    finally:
        factory.close()
    assert not report.ok
    written = list(folder.rglob("*.json"))
    assert written, report.render()
    text = "".join(path.read_text(encoding="utf-8") for path in written)
    assert "shrunk/wire-command/schema_patterns_are_ecma_262" in text
    assert str(tests) not in text and sys.executable not in text
