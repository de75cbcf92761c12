"""The TypeScript kit (``interop/typescript``), built for the tests that run its servers.

:func:`built_kit` runs ``npm ci`` when the kit has no ``node_modules`` and
``npm run build`` when its ``dist`` is missing or older than a source file, so
``interop/node/server.js`` and the example stores run on the current sources.
Without node and npm the tests skip, except under ``CI=true`` where they fail.
Several pytest-xdist workers may ask at once: an exclusive lock on a file beside the
system's temporary files makes one of them build while the others wait, then find the
kit built.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "interop" / "typescript"
NODE = shutil.which("node")
NPM = shutil.which("npm")
SOURCES = ("src", "examples", "test", "scripts")


def node_or_skip() -> str:
    """The node executable; under CI=true a missing node or npm fails the test, never skips it."""
    if NODE is None or NPM is None:
        missing = "node" if NODE is None else "npm"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} is not on PATH (CI=true): the TypeScript kit cannot be built")
        pytest.skip(f"{missing} is not on PATH")
    return NODE


def _stale() -> bool:
    built = KIT / "dist" / "src" / "index.js"
    if not built.exists():
        return True
    newest = max(
        (path.stat().st_mtime for folder in SOURCES for path in (KIT / folder).rglob("*")
         if path.is_file()),
        default=0.0,
    )
    newest = max(newest, (ROOT / "spec" / "schemas" / "kinds.json").stat().st_mtime)
    return newest > built.stat().st_mtime or not all(
        (KIT / "schemas" / name).exists() for name in ("kinds.json", "kinds.validators.cjs"))


def built_kit() -> Path:
    """The kit's folder, built from its current sources (npm ci, npm run build when needed)."""
    node_or_skip()
    assert NPM is not None
    key = hashlib.sha256(str(KIT).encode("utf-8")).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"convledger-kit-build-{key}.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        _build(NPM)
    return KIT


def _build(npm: str) -> None:
    """``npm ci`` and ``npm run build`` as far as the kit needs them (under the lock)."""
    steps = []
    if not (KIT / "node_modules").exists():
        steps.append([npm, "ci", "--no-audit", "--no-fund"])
    if steps or _stale():
        steps.append([npm, "run", "build"])
    for step in steps:
        result = subprocess.run(step, cwd=KIT, capture_output=True, text=True, check=False,
                                timeout=600)
        assert result.returncode == 0, f"{' '.join(step)} failed:\n{result.stdout}{result.stderr}"
