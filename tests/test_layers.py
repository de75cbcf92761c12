"""The layers of ARCHITECTURE.md hold: who may import whom, no import cycles, small modules.

- The reference (``convledger``) imports neither the conformance suite nor
  the benchmark harness; the suite imports the harness only in its CLI, lazily
  (``--bench``).
- No import cycle among the modules of the reference, the suite or the
  harness (imports at module level, where a cycle can break an import;
  imports inside functions and ``TYPE_CHECKING`` blocks are not counted),
  and none in the suite even counting those.
- Every module of the suite that registers checks is listed in
  ``registry.CHECK_MODULES``.
- No module is over about 400 lines, except those a table dominates (listed
  below with their table).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "convledger": ROOT / "reference" / "convledger",
    "convledger_conformance": ROOT / "conformance" / "convledger_conformance",
    "convledger_bench": ROOT / "benchmarks" / "convledger_bench",
}
LIMIT = 400
"""The aim for one module's lines (ARCHITECTURE.md)."""
TABLE_DOMINATED: dict[str, str] = {}
"""Modules allowed past :data:`LIMIT`, each with the table that makes it long."""


def modules() -> Iterator[tuple[str, Path]]:
    """(dotted name, path) of every module of the three packages."""
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join([package, *parts]), path


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level_imports(name: str, path: Path) -> set[str]:
    """The modules ``name`` imports at module level (absolute names)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base]) if base else ".".join(anchor)
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)

    visit(tree.body)
    return found


def all_imports() -> dict[str, set[str]]:
    """Every module and the project modules it imports at module level."""
    paths = dict(modules())
    return {
        name: {target for target in top_level_imports(name, path) if target in paths}
        for name, path in paths.items()
    }


def every_import(path: Path) -> set[str]:
    """Every module ``path`` names in any import statement, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_reference_imports_neither_the_suite_nor_the_harness() -> None:
    """spec -> reference -> suite: the reference stands alone."""
    offenders = {
        name: sorted(
            target for target in every_import(path)
            if target.split(".")[0] in {"convledger_conformance", "convledger_bench"}
        )
        for name, path in modules()
        if name.split(".")[0] == "convledger"
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_suite_imports_the_harness_only_for_bench() -> None:
    """Only the CLI's ``--bench`` reaches the harness, and only inside a function."""
    graph = all_imports()
    assert not any(
        target.startswith("convledger_bench")
        for name, targets in graph.items() if name.startswith("convledger_conformance")
        for target in targets
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others, at module level.

    A package's ``__init__`` re-exporting its own modules is not a cycle of
    concern, so edges from a package to its own submodules are left out.
    """
    graph = {
        name: {t for t in targets if not t.startswith(f"{name}.")}
        for name, targets in all_imports().items()
    }
    assert cycles(graph) == []


def every_project_import(name: str, path: Path) -> set[str]:
    """The modules ``name`` imports anywhere: module level, functions, ``TYPE_CHECKING``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


LAZY_EDGES = {("convledger_conformance.cli", "convledger_bench"),
              ("convledger_conformance.bench_command", "convledger_bench")}
"""Imports inside functions that are lazy on purpose (``--bench``, the ``bench`` subcommand),
prefix of the target."""


def test_the_suite_has_no_cycles_even_inside_functions() -> None:
    """Counting imports inside functions too, the suite's modules form no cycle.

    A function-level import hides a cycle from import time but not from the
    reader: the modules still need each other. Only the CLI's lazy import of
    the benchmark harness is left out (it is no cycle, but it is allowed to be
    lazy).
    """
    paths = dict(modules())
    graph = {
        name: {
            target for target in every_project_import(name, path)
            if target in paths and not target.startswith(f"{name}.")
            and not any(name == a and target.startswith(b) for a, b in LAZY_EDGES)
        }
        for name, path in paths.items()
        if name.startswith("convledger_conformance")
    }
    assert cycles(graph) == []


def test_every_module_of_checks_is_registered() -> None:
    """``registry.CHECK_MODULES`` lists exactly the modules that register checks.

    A module registers checks when it imports :func:`~convledger_conformance.check`.
    """
    from convledger_conformance.registry import CHECK_MODULES

    names = {"convledger_conformance.check", "convledger_conformance.registry.check"}
    registering = {
        name for name, path in modules()
        if name.startswith("convledger_conformance.")
        and name != "convledger_conformance.registry"
        and names & every_project_import(name, path)
    }
    assert len(set(CHECK_MODULES)) == len(CHECK_MODULES)
    assert set(CHECK_MODULES) == registering


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a two-module cycle is found."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_modules_are_small() -> None:
    """No module over about 400 lines unless a table dominates it."""
    long = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in modules()
        if len(path.read_text(encoding="utf-8").splitlines()) > LIMIT + 20
    }
    assert {name: lines for name, lines in long.items() if name not in TABLE_DOMINATED} == {}
    assert set(TABLE_DOMINATED) <= set(long), "a listed module is short now: unlist it"


def test_check_order_does_not_depend_on_what_was_imported_first() -> None:
    """Checks come in the order of CHECK_MODULES, whichever module a process imported first."""
    import subprocess
    import sys

    program = (
        "import importlib, sys\n"
        "if sys.argv[1]: importlib.import_module(sys.argv[1])\n"
        "from convledger_conformance.registry import all_checks\n"
        "print(' '.join(item.name for item in all_checks()))\n"
    )
    orders = {
        first: subprocess.run(
            [sys.executable, "-c", program, first], capture_output=True, text=True, check=True
        ).stdout
        for first in ("", "convledger_conformance.ledger.machine",
                      "convledger_conformance.wire.checks_callbacks")
    }
    assert len(set(orders.values())) == 1, orders
