"""When a store fails (issue 35): the root cause first, one faithful trace, a rerun that cannot lie.

Three bugs put into the README's own example store (:mod:`first_store`), each run
as its user would: ``convledger-conformance`` in a subprocess on a module
``mystore.py`` that is then fixed in place. Each run must

* open with a "start here" line naming the check and id of the real cause;
* write a trace that ``replay`` fails on the bug and passes on the fix;
* fail again on ``--lf`` until the store is fixed, and pass after the fix.

The checks are focused (``-k``) on the one that names the cause and others the
same bug fails first in a whole run (the whole run at ``smoke``, for the
figures of the closing note of the issue, takes minutes). Each bug takes one
to two minutes (several runs with shrinking and recording), so these and the
plugin's rerun test are opt-in: ``CONVLEDGER_FAILURE_REPORTS=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent

deep = pytest.mark.skipif(
    not os.environ.get("CONVLEDGER_FAILURE_REPORTS"),
    reason="minutes of subprocess runs: set CONVLEDGER_FAILURE_REPORTS=1",
)

BUGS = {
    # bug maker: (-k expression, the check and ids "start here" must name)
    "make_seq_bug": ("seqs_follow_the_head or integral_floats or read_windows",
                     "seqs_follow_the_head [LED-002]"),
    "make_aliasing_bug": ("caller_values_stay_outside or seqs_follow_the_head",
                          "caller_values_stay_outside [LED-014]"),
    "make_kind_bug": ("event_ids_unique_in_store or errors_name_requirements or refusal_kinds",
                      "event_ids_unique_in_store [LED-003]"),
}


def _cli(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(TESTS)]),
                   "XDG_CACHE_HOME": str(folder / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "convledger_conformance", *arguments],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=900, check=False,
    )


def _use(folder: Path, maker: str) -> None:
    """``mystore.make_store`` is now ``first_store.<maker>`` (the user edits their store)."""
    (folder / "mystore.py").write_text(f"from first_store import {maker} as make_store\n")
    for cached in (folder / "__pycache__").glob("mystore*"):
        cached.unlink()


@deep
@pytest.mark.parametrize("maker", sorted(BUGS))
def test_a_bug_gets_start_here_a_faithful_trace_and_a_rerun_that_fails_until_fixed(
    tmp_path: Path, maker: str
) -> None:
    """The three evidences of issue 35's done-when, for one bug of the README's store."""
    keyword, cause = BUGS[maker]
    _use(tmp_path, maker)
    common = ["--store", "mystore:make_store", "--profile", "smoke", "--state", "state"]
    run = _cli(tmp_path, *common, "--seed", "7", "-k", keyword,
               "--record-failures", "traces", "--json", "report.json")
    assert run.returncode == 1, run.stderr[-2000:]
    first = run.stdout.splitlines()[0]
    assert first.startswith(f"Start here: {cause}:"), first
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert report["startHere"] == first
    assert "@reproduce_failure" not in run.stdout
    assert "not_run" not in {row["status"] for row in report["requirements"]
                             if row["id"] in report.get("notSelected", [])}

    traces = sorted((tmp_path / "traces").glob("*.json"))
    assert traces, run.stdout[-3000:]
    on_bug = _cli(tmp_path, "replay", "traces", "--store", "mystore:make_store")
    assert on_bug.returncode == 1 and "failed:" in on_bug.stdout, on_bug.stdout
    on_fix = _cli(tmp_path, "replay", str(tmp_path / "traces" / "*.json"),
                  "--store", "first_store:make_fixed")
    assert on_fix.returncode == 0 and "all applicable passed" in on_fix.stdout, on_fix.stdout

    unfixed = _cli(tmp_path, *common, "--lf")
    assert unfixed.returncode == 1, unfixed.stdout[-2000:]
    assert unfixed.stdout.splitlines()[0].startswith(f"Start here: {cause}:")
    again = _cli(tmp_path, *common, "--lf")  # still failing: --lf does not forget it
    assert again.returncode == 1
    _use(tmp_path, "make_fixed")
    fixed = _cli(tmp_path, *common, "--lf")
    assert fixed.returncode == 0, fixed.stdout[-2000:]
    assert "check(s) failed in" in fixed.stderr  # it ran the failed checks, not nothing


def test_a_trace_never_holds_an_operation_the_store_does_not_declare(tmp_path: Path) -> None:
    """The aliasing store declares ledger alone: its trace has ledger steps only, and fails."""
    _use(tmp_path, "make_aliasing_bug")
    run = _cli(tmp_path, "--store", "mystore:make_store", "--profile", "smoke", "--seed", "3",
               "-k", "caller_values_stay_outside", "--record-failures", "traces",
               "--state", "state")
    assert run.returncode == 1
    (trace,) = (tmp_path / "traces").glob("*.json")
    document = json.loads(trace.read_text("utf-8"))
    for recorded in document["traces"]:
        assert recorded["capabilities"] == ["ledger"]
        assert {step["op"] for step in recorded["steps"]} <= {"append", "read", "head", "import"}


def test_exitfirst_stops_at_the_first_failed_check(tmp_path: Path) -> None:
    """-x: the checks after the first failure are not run, and say why."""
    _use(tmp_path, "make_kind_bug")
    run = _cli(tmp_path, "--store", "mystore:make_store", "--profile", "smoke", "--seed", "7",
               "-k", "refusal_kinds or event_ids_unique_in_store or seqs_follow_the_head",
               "-x", "--json", "report.json", "--state", "state", "--no-shrink")
    assert run.returncode == 1
    checks = json.loads((tmp_path / "report.json").read_text("utf-8"))["checks"]
    failed = [entry["name"] for entry in checks if entry["status"] == "failed"]
    stopped = [entry for entry in checks if "stopped at the first failed check" in
               entry["message"]]
    assert len(failed) == 1 and stopped, checks


@deep
def test_the_plugin_keeps_a_failed_seed_until_the_store_is_fixed(
    pytester: pytest.Pytester,
) -> None:
    """pytest --lf replays the failing examples: it fails on the bug, passes on the fix."""
    pytester.makeconftest('pytest_plugins = ["convledger_conformance.pytest_plugin"]\n')
    pytester.makepyfile(test_user_store=(
        "def test_conformance(conformance_check):\n    conformance_check()\n"))
    reach = f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
    pytester.makepyfile(mystore=reach + "from first_store import make_seq_bug as make_store\n")
    options = ["--convledger-store", "mystore:make_store",
               "--convledger-profile", "smoke", "-k", "seqs_follow_the_head"]
    first = pytester.runpytest_subprocess(*options, "--convledger-seed", "7")
    first.assert_outcomes(failed=1)
    assert "@reproduce_failure" not in first.stdout.str()
    first.stdout.fnmatch_lines(["*convledger seed: repeat with --convledger-seed 7*"])
    for _ in range(2):  # a fresh seed each run would not replay it: the kept seed does
        rerun = pytester.runpytest_subprocess(*options, "--lf")
        rerun.assert_outcomes(failed=1)
    pytester.makepyfile(mystore=reach + "from first_store import make_fixed as make_store\n")
    pytester.runpytest_subprocess(*options, "--lf").assert_outcomes(passed=1)



def test_the_typescript_skeletons_hooks_are_listed_in_start_here() -> None:
    """The kit's skeleton throws the Python skeleton's message (skeleton_ts.py), so a run of
    it gets the list of hooks to write, ledger's first, though no Python base has them."""
    from convledger.store import Capability
    from convledger_conformance.diagnosis import missing_hooks, start_here
    from convledger_conformance.results import FAILED, CheckResult

    def failed(name: str, message: str) -> CheckResult:
        return CheckResult(name=name, ids=("LED-003",), capability=Capability.LEDGER,
                           status=FAILED, failed_ids=("LED-003",), message=message)

    checks = [
        failed("a", "WireProtocolError: kind 'internal': Error: purge (capability purge) "
                    "is not implemented yet"),
        failed("b", "WireProtocolError: kind 'internal': Error: write (capability ledger) "
                    "is not implemented yet"),
        failed("c", "WireProtocolError: kind 'internal': Error: write (capability ledger) "
                    "is not implemented yet"),
    ]
    assert [(hook.name, hook.capability, hook.checks) for hook in missing_hooks(checks)] == [
        ("write", "ledger", 2), ("purge", "purge", 1)]
    assert start_here(checks).startswith("Start here: implement write (capability ledger)")


def test_a_length_prefix_of_printable_text_is_called_stdout_output() -> None:
    """A server that prints a line on stdout: the refusal of its "length" says so (WIR-023)."""
    from convledger_conformance.wire.connection import _oversized

    message = _oversized(int.from_bytes(b"writ", "big"), b"writ")
    assert "WIR-001" in message and "WIR-023" in message and "'writ'" in message
    assert "WIR-023" not in _oversized(2**31, (2**31).to_bytes(4, "big"))
