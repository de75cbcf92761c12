"""Packaging: the wheel carries every file the packages read, and runs without a checkout.

The quick test compares the package-data globs of ``pyproject.toml`` with the
data files in the package folders (so a new vector file cannot be left out of
the wheel). The slow one builds the wheel with ``python -m build``, installs it
into a fresh virtual environment and runs both commands from an empty
temporary directory, as ``.ci/run`` does.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "convledger": ROOT / "reference" / "convledger",
    "convledger_conformance": ROOT / "conformance" / "convledger_conformance",
    "convledger_bench": ROOT / "benchmarks" / "convledger_bench",
}


def _data_files() -> dict[str, set[str]]:
    """Every file of each package folder that is not Python source, relative to the package."""
    found: dict[str, set[str]] = {}
    for package, folder in PACKAGES.items():
        found[package] = {
            path.relative_to(folder).as_posix()
            for path in folder.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and "__pycache__" not in path.parts
        }
    return found


def test_package_data_globs_cover_every_data_file() -> None:
    """Each data file in a package folder matches a package-data glob of pyproject.toml."""
    configuration = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    globs = configuration["tool"]["setuptools"]["package-data"]
    for package, files in _data_files().items():
        missing = sorted(
            name for name in files
            if not any(fnmatch.fnmatch(name, pattern) for pattern in globs.get(package, ()))
        )
        assert not missing, f"{package}: not in the wheel: {missing}"
    assert configuration["project"]["license"] == "Apache-2.0"
    assert (ROOT / "LICENSE").read_text("utf-8").lstrip().startswith("Apache License")


@pytest.mark.slow
def test_wheel_installs_and_runs_without_a_checkout(tmp_path: Path) -> None:
    """python -m build makes sdist and wheel; the wheel alone runs the smoke suite."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=900)
    wheels = list(dist.glob("convledger-*.whl"))
    assert len(wheels) == 1 and list(dist.glob("convledger-*.tar.gz"))
    with zipfile.ZipFile(wheels[0]) as archive:
        names = set(archive.namelist())
    for package, files in _data_files().items():
        assert {f"{package}/{name}" for name in files} <= names
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    bin_dir = environment / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheels[0])],
                   check=True, capture_output=True, timeout=900)
    empty = tmp_path / "empty"
    empty.mkdir()
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    version = subprocess.run([str(bin_dir / "convledger"), "--version"], cwd=empty, env=clean,
                             capture_output=True, text=True, timeout=60, check=False)
    assert version.returncode == 0 and version.stdout.startswith("convledger 0."), version
    run = subprocess.run(
        [str(bin_dir / "convledger-conformance"), "--store", "convledger.memory:MemoryStore",
         "--profile", "smoke"],
        cwd=empty, env=clean, capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = next(line for line in run.stdout.splitlines()
                   if line.startswith("convledger-conformance "))
    assert " 0 failed, " in summary, run.stdout[-2000:]
    assert sorted(path.name for path in empty.iterdir()) == []
    _bench_gate_from_the_wheel(bin_dir, tmp_path / "gate", clean)


SLOWED = """
import time

from convledger.memory import MemoryStore


class SlowAppend(MemoryStore):
    def append(self, conversation_id, drafts):
        time.sleep(0.002)
        return super().append(conversation_id, drafts)
"""


def _bench_gate_from_the_wheel(bin_dir: Path, folder: Path, environment: dict[str, str]) -> None:
    """Issue 34 from the bare venv (no rfc8785, no dev extras): save, compare 0, slowed 1."""
    folder.mkdir()
    (folder / "slowed.py").write_text(SLOWED, "utf-8")

    def bench(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / "convledger-conformance"), "bench", "--workload", "small",
             "--rounds", "30", *arguments], cwd=folder, env=environment, capture_output=True,
            text=True, timeout=900, check=False)

    saved = bench("--store", "convledger.memory:MemoryStore", "--save", "base")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    assert "\nexport " in saved.stdout and "rfc8785" not in saved.stdout
    gate = ("--compare", "base", "--fail-on", "append.single:100%")
    same = bench("--store", "convledger.memory:MemoryStore", *gate)
    assert same.returncode == 0, same.stdout + same.stderr
    slowed = bench("--store", "slowed:SlowAppend", *gate)
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr
    assert "REGRESSION 1 (append.single)" in slowed.stdout.splitlines()[-1], slowed.stdout
