"""The clear code and the fast code meet at one seam, ``convledger.codec``.

1. No module of the reference but ``convledger/codec.py`` (and
   ``convledger/fast/*`` itself) imports ``convledger.fast``; no module of the
   conformance suite imports ``convledger.fast`` or ``convledger.codec``: its
   oracles are the clear code. The benchmark harness (``convledger_bench``,
   outside the suite) may: its ``canonical`` figure measures the fast encoder
   on purpose.
2. The reference behaves the same on the clear code: the memory and SQLite
   store tests pass with ``CONVLEDGER_CODEC=clear``, and ``convledger.fast``
   is never even imported in that run.

The fast code equals the clear code by the property tests
``tests/test_fast_canonical.py``, ``tests/test_fast_decode.py``,
``tests/test_fast_archive.py``, ``tests/test_fast_payload.py``,
``tests/test_fast_validate.py`` and ``tests/test_fast_append.py``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from convledger import canonical, codec

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
CONFORMANCE = ROOT / "conformance"

SEAM = "convledger.codec"
FAST = "convledger.fast"
BENCHMARKS = ROOT / "benchmarks"


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module in ``path`` under the package root ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def dynamic_import(node: ast.AST) -> str | None:
    """The module named by ``importlib.import_module("...")`` or ``__import__("...")``."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    function = node.func
    called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    first = node.args[0]
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return str(first.value)
    return None


def imported_names(path: Path, root: Path) -> Iterator[str]:
    """Every name ``path`` imports, anywhere in its body (functions too), fully qualified.

    ``import a.b`` yields ``a.b``; ``from a import b`` yields ``a.b`` (``b`` is a
    submodule or a name of ``a``: inside ``a`` either way); relative imports
    are resolved against the module's package; a string literal handed to
    ``importlib.import_module`` or ``__import__`` counts too.
    """
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif (dynamic := dynamic_import(node)) is not None:
            yield dynamic


def within(module: str, package: str) -> bool:
    """True when ``module`` is ``package`` or one of its submodules."""
    return module == package or module.startswith(package + ".")


def imports_of(root: Path, package: str) -> dict[str, set[str]]:
    """Module name -> the names it imports, for every source file of ``package``."""
    return {
        module_name(path, root): set(imported_names(path, root))
        for path in sorted((root / package).rglob("*.py"))
    }


def test_only_the_seam_imports_the_fast_code() -> None:
    """Reference modules reach ``convledger.fast`` only through ``convledger.codec``."""
    imports = imports_of(REFERENCE, "convledger")
    offenders = {
        module: sorted(name for name in names if within(name, FAST))
        for module, names in imports.items()
        if module != SEAM and not within(module, FAST)
        and any(within(name, FAST) for name in names)
    }
    assert offenders == {}
    # The walk sees imports at all: the seam's own imports of the fast code are found.
    for fast_module in ("canonical", "decode", "archive"):
        assert any(within(name, f"{FAST}.{fast_module}") for name in imports[SEAM])


def test_the_conformance_suite_uses_the_clear_code() -> None:
    """Models, machines, checks and support modules import neither the fast code nor the seam."""
    imports = imports_of(CONFORMANCE, "convledger_conformance")
    assert len(imports) > 20
    offenders = {
        module: wrong
        for module, names in imports.items()
        if (wrong := sorted(
            name for name in names
            if within(name, FAST) or within(name, SEAM)
        ))
    }
    assert offenders == {}
    # The walk sees imports at all: the benchmark harness measures the fast encoder.
    harness = imports_of(BENCHMARKS, "convledger_bench")
    assert any("convledger.fast.canonical" in names for names in harness.values())


def test_the_seam_runs_the_chosen_code() -> None:
    """In this process the seam's functions are the implementations its choice names."""
    assert codec.ENVIRONMENT == "CONVLEDGER_CODEC"
    expected = "clear" if os.environ.get(codec.ENVIRONMENT) == "clear" else "fast"
    assert expected == codec.CHOSEN
    if codec.CHOSEN == "fast":
        from convledger.fast import archive as fast_archive
        from convledger.fast import canonical as fast_canonical
        from convledger.fast import decode as fast_decode
        from convledger.fast import payload as fast_payload

        assert codec.encode is fast_canonical.encode
        assert codec.encode_payload_copied is fast_payload.encode_payload_copied
        assert codec.decode_stored is fast_decode.decode_stored
        assert codec.decode_stored_page is fast_decode.decode_stored_page
        assert codec.decode_stored_bytes is fast_decode.decode_stored_bytes
        assert codec.encode_stored is fast_archive.encode_stored
    else:
        assert codec.encode is canonical.encode
        assert codec.encode_stored is None
        assert codec.encode_payload_copied({"a": 1}) == (b'{"a":1}', None)
        assert codec.decode_stored_page.__module__ == "convledger.codec"
        assert codec.decode_stored_bytes.__module__ == "convledger.codec"
    value = {"b": [1, 1.5, "\u2028"], "a": None}
    assert codec.encode(value) == canonical.encode(value)
    assert codec.decode_stored(canonical.encode(value).decode("utf-8")) == value
    assert codec.decode_stored_page([canonical.encode(value), b"1e+21"]) == [value, 1e21]
    assert codec.decode_stored_bytes(canonical.encode(value)) == value
    assert type(codec.decode_stored_bytes(b"10000000000000000")) is float  # CAN-013: 1e16


def seam_environment(choice: str) -> dict[str, str]:
    """This process's environment with ``CONVLEDGER_CODEC=choice`` and this checkout first."""
    environment = dict(os.environ)
    environment[codec.ENVIRONMENT] = choice
    paths = [str(REFERENCE), str(CONFORMANCE)]
    if environment.get("PYTHONPATH"):
        paths.append(environment["PYTHONPATH"])
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    return environment


def test_an_unknown_choice_is_refused_at_import() -> None:
    """A typo in ``CONVLEDGER_CODEC`` cannot silently run the fast code."""
    run = subprocess.run(
        [sys.executable, "-c", "import convledger.codec"],
        cwd=ROOT, env=seam_environment("slow"), capture_output=True, text=True, timeout=120,
    )
    assert run.returncode != 0
    assert "CONVLEDGER_CODEC must be 'fast' or 'clear', not 'slow'" in run.stderr


CLEAR_RUN = """
import sys

import pytest

status = pytest.main(sys.argv[1:])
from convledger import codec

fast = sorted(name for name in sys.modules if name.startswith("convledger.fast"))
if codec.CHOSEN != "clear" or fast:
    print(f"not the clear code: CHOSEN={codec.CHOSEN!r}, loaded {fast}")
    sys.exit(1)
sys.exit(int(status))
"""


@pytest.mark.skipif(
    os.environ.get(codec.ENVIRONMENT) == "clear", reason="this run is on the clear code already"
)
def test_the_reference_behaves_the_same_on_the_clear_code() -> None:
    """The memory and SQLite store tests pass on ``CONVLEDGER_CODEC=clear``, fast code unloaded."""
    run = subprocess.run(
        [
            sys.executable, "-c", CLEAR_RUN, "-q", "-x", "-p", "no:cacheprovider",
            "tests/test_memory_store.py", "tests/test_sqlite_store.py",
        ],
        cwd=ROOT, env=seam_environment("clear"), capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert " passed" in run.stdout
