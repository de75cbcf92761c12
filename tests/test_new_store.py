"""``convledger-conformance new-store``: the skeleton imports, type-checks, and fails by hook name.

The skeleton is read from the capability bases (convledger_conformance.skeleton),
so these tests compare it with the bases and with the table of ARCHITECTURE.md,
run mypy strict on it (and on a copy with one wrong return type, which must
fail, so a pass is not mypy seeing nothing), and run the suite against it: the
run ends in a report whose failures name the hooks still to implement.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from convledger.capabilities import Capability
from convledger_conformance.cli import main
from convledger_conformance.report import FAILED
from convledger_conformance.runner import run_suite
from convledger_conformance.skeleton import BASES, CLASS_NAME, hooks_of

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = str(Path(sys.executable).with_name("convledger-conformance"))
EVERY = tuple(c for c in Capability if c is not Capability.MIGRATION)


def new_store(path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, "new-store", str(path), *options], capture_output=True,
                          text=True, check=False)


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def every(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The skeleton of every capability that has operations, written by the console script."""
    path = tmp_path_factory.mktemp("skeleton") / "every_store.py"
    done = new_store(path, "--capabilities", ",".join(c.value for c in EVERY))
    assert done.returncode == 0, done.stderr
    assert f"{sum(len(hooks_of(c)) for c in EVERY)} hooks" in done.stdout
    return path


def test_every_hook_of_every_base_is_there_and_raises_its_name(every: Path) -> None:
    module = load(every)
    store = module.make_store()  # an abstract hook left out would be a TypeError here
    assert store.capabilities == frozenset(EVERY)
    cls = getattr(module, CLASS_NAME)
    for capability, base in BASES.items():
        assert base.__abstractmethods__ <= set(cls.__dict__), capability
    for capability in EVERY:
        hooks = hooks_of(capability)
        assert hooks, capability
        for hook in hooks:
            method = getattr(store, hook.name)
            arity = len(inspect.signature(method).parameters)
            with pytest.raises(NotImplementedError, match=re.escape(hook.name)):
                method(*[None] * arity)
            doc = inspect.getdoc(method) or ""
            assert "Receives:" in doc and "Returns:" in doc and "Contract:" in doc
            assert all(ident in doc for ident in hook.ids)


def test_the_hooks_are_those_of_the_architecture_table() -> None:
    """ARCHITECTURE.md's capability table names each base's hooks: the skeleton has the same."""
    table = (ROOT / "ARCHITECTURE.md").read_text("utf-8")
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| (`\w+Base`: [^|]+|none: implement [^|]+) \|",
                      table, re.MULTILINE)
    assert len(rows) == len(EVERY)
    for value, hooks in rows:
        named = set(re.findall(r"`(\w+)`", hooks.split(":", 1)[1]))
        assert named == {hook.name for hook in hooks_of(Capability(value))}, value
    ledger = {hook.name: hook for hook in hooks_of(Capability.LEDGER)}
    assert {"LED-002", "LED-003", "LED-004", "LED-005"} <= set(ledger["_append"].ids)


def test_the_skeleton_type_checks_under_mypy_strict(every: Path, tmp_path: Path) -> None:
    environment = {**os.environ, "MYPYPATH": str(ROOT / "reference")}
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
               "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run([*command, str(every)], capture_output=True, text=True,
                          env=environment, check=False)
    assert done.returncode == 0, done.stdout
    wrong = tmp_path / "wrong_store.py"  # the control: mypy must see the bases' types
    text = every.read_text("utf-8")
    assert "    ) -> int:\n" in text
    wrong.write_text(text.replace("    ) -> int:\n", "    ) -> str:\n", 1), "utf-8")
    done = subprocess.run([*command, str(wrong)], capture_output=True, text=True,
                          env=environment, check=False)
    assert done.returncode == 1 and '"_head"' in done.stdout, done.stdout
    assert "[override]" in done.stdout, done.stdout


def test_the_suite_against_the_skeleton_names_the_hooks(tmp_path: Path) -> None:
    path = tmp_path / "ledger_store.py"
    assert new_store(path).returncode == 0
    module = load(path)
    report = run_suite(module.make_store, profile="smoke", derandomize=True, shrink=False)
    failed = [result for result in report.checks if result.status == FAILED]
    assert failed and report.summary[FAILED] > 0
    hooks = [hook.name for hook in hooks_of(Capability.LEDGER)]
    named = {hook for result in failed for hook in hooks if f"{hook} (capability" in result.message}
    assert named == set(hooks)  # every hook is named by some failure
    # Each failure names its hook, except checks of the wire chapter: there the store
    # sits behind an in-process wire server, which answers the hook's error as `internal`.
    silent = [r for r in failed if not any(f"{h} (capability" in r.message for h in hooks)]
    assert all(i.startswith("WIR-") for result in silent for i in result.ids), [
        (r.name, r.message) for r in silent
    ]


def test_refusals_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "mine.py"
    existing.write_text("keep = 1\n", "utf-8")
    cases = [
        (existing, ()),
        (tmp_path / "a.py", ("--capabilities", "migration")),
        (tmp_path / "b.py", ("--capabilities", "ledger,telepathy")),
        (tmp_path / "not-a-module.py", ()),
    ]
    for path, options in cases:  # in process: the console script is run above
        assert main(["new-store", str(path), *options]) == 2, path
        assert "new-store:" in capsys.readouterr().err
    assert existing.read_text("utf-8") == "keep = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.py"]


# -- --lang ts: a skeleton on the TypeScript kit (issue 32) ----------------------------------

def _interface_members(text: str, interface: str) -> set[str]:
    body = text.split(f"export interface {interface} {{", 1)[1].split("\n}", 1)[0]
    return set(re.findall(r"^  (\w+)\??[<(]", body, flags=re.MULTILINE))


def test_the_ts_hooks_are_the_kits_interfaces() -> None:
    """Each hook the TypeScript skeleton writes is a member of the kit's storage interfaces."""
    from convledger_conformance.skeleton_ts import HOOKS, STATE_HOOKS

    text = (ROOT / "interop" / "typescript" / "src" / "storage.ts").read_text("utf-8")
    written = {name for hooks in HOOKS.values() for name, _, _ in hooks}
    members = (_interface_members(text, "LedgerStorage") - {"close"}) | _interface_members(
        text, "PurgeStorage") | _interface_members(text, "PersistentStorage") | _interface_members(
        text, "SearchStorage")
    assert written == members
    spill_hooks = {name for name, _, _ in STATE_HOOKS[Capability.SPILLS]}
    assert spill_hooks == _interface_members(text, "SpillState") == {"spill", "spills", "spillData"}
    for name, _, contract in STATE_HOOKS[Capability.SPILLS]:  # each names the ids that bind it
        assert re.search(r"SPL-0\d\d", contract), name


def test_the_ts_skeleton_compiles_and_fails_by_hook_name(tmp_path: Path) -> None:
    """tsc (strict) accepts the skeleton; served, an append is answered internal naming `write`."""
    from convledger_conformance.support import draft
    from convledger_conformance.wire.client import WireStoreFactory
    from node_kit import built_kit, node_or_skip

    kit = built_kit()
    path = tmp_path / "my_store.ts"
    done = new_store(path, "--lang", "ts", "--capabilities",
                     "ledger,purge,projections,persistence,spills,search")
    assert done.returncode == 0, done.stderr
    assert "8 hooks" in done.stdout
    assert "class MySpills implements SpillState" in path.read_text("utf-8")
    modules = tmp_path / "node_modules" / "@convledger"
    modules.mkdir(parents=True)
    (modules / "kit").symlink_to(kit)
    (tmp_path / "package.json").write_text('{"type": "module"}', "utf-8")
    tsc = subprocess.run(
        [node_or_skip(), str(kit / "node_modules" / "typescript" / "bin" / "tsc"), "--strict",
         "--module", "nodenext", "--target", "es2022", "--types", "node", "--typeRoots",
         str(kit / "node_modules" / "@types"), "--outDir", str(tmp_path), str(path)],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
    )
    assert tsc.returncode == 0, tsc.stdout + tsc.stderr
    factory = WireStoreFactory([node_or_skip(), str(tmp_path / "my_store.js")])
    try:
        store = factory()
        unwritten = r"write \(capability ledger\) is not implemented yet"
        with pytest.raises(Exception, match=unwritten):
            store.append("c", [draft("e1")])
        assert "spills" in {c.value for c in store.capabilities}
        with pytest.raises(Exception, match=unwritten):
            store.put_spill("c", b"x", media_type="text/plain", reference="r", event_id="s1",
                            occurred_at="2026-03-01T09:00:00Z",
                            operation={"operationId": "o", "authorization": {}})
    finally:
        factory.close()
    again = new_store(tmp_path / "other.ts", "--lang", "ts", "--capabilities", "transitions")
    assert again.returncode == 2 and "does not serve transitions" in again.stderr
