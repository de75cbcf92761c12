"""The README's runnable examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _section_code(title: str) -> str:
    """The first python code block under the README heading ``title``."""
    text = README.read_text("utf-8")
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block under {title!r}"
    return match.group(1)


def test_runtime_transitions_example_runs() -> None:
    """The example of 'Runtime transitions' runs and its closing assertion holds."""
    namespace: dict[str, object] = {}
    exec(compile(_section_code("Runtime transitions"), "README.md", "exec"), namespace)
    assert namespace["store"] is not None


def test_projections_spills_and_search_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example of 'Projections, spills and search' runs on a file in a temp folder."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    code = _section_code("Projections, spills and search")
    exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "example.sqlite").exists()


def test_own_store_example_passes_the_ledger_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store of 'Validate your own store' passes every requirement it does not exempt."""
    from convledger.capabilities import Capability
    from convledger_conformance import run_suite

    namespace: dict[str, object] = {"__name__": "mystore"}
    exec(compile(_section_code("Validate your own store"), "README.md", "exec"), namespace)
    make_store = namespace["make_store"]
    store = make_store()  # type: ignore[operator]
    assert store.capabilities == frozenset({Capability.LEDGER})
    report = run_suite(make_store, profile="smoke", derandomize=True)  # type: ignore[arg-type]
    statuses = {row.id: row.status for row in report.requirements}
    assert "failed" not in statuses.values() and "not_run" not in statuses.values()
    passed = sum(status == "passed" for status in statuses.values())
    assert passed >= 100
    stated = re.search(r"passes all (\d+) requirements of the ledger core",
                       README.read_text("utf-8"))
    assert stated is not None and int(stated.group(1)) == passed, "the README states the count"
