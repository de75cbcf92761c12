"""Small things a first user meets (issue 19, point 9), each as the user meets it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from convledger.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parent.parent


def _convledger(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convledger", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_refused_import_leaves_no_database_file(tmp_path: Path) -> None:
    """A refused `convledger import` into a new file leaves no file; an existing one unchanged."""
    (tmp_path / "bad.json").write_text('{"format": "convledger.archive"}', "utf-8")
    result = _convledger("import", "new.sqlite", "bad.json", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bad.json"]
    existing = tmp_path / "old.sqlite"
    SqliteStore(existing).close()
    before = existing.read_bytes()
    again = _convledger("import", "old.sqlite", "bad.json", cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    assert existing.read_bytes() == before


def test_spec_links_stay_inside_the_repository() -> None:
    """No relative link or path in spec/ or the README points above the repository."""
    documents = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "spec").rglob("*.md")]
    for path in documents:
        text = path.read_text("utf-8")
        for target in re.findall(r"\]\(([^)#]+)\)|`(\.\./[^`]*)`", text):
            link = next(part for part in target if part)
            if "://" in link:
                continue
            resolved = (path.parent / link).resolve()
            assert resolved.is_relative_to(ROOT), f"{path.name} points outside: {link}"
            assert resolved.exists(), f"{path.name} links to a missing {link}"
