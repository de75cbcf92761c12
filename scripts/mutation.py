"""Mutation testing of the reference store with the conformance suite as the test command.

Issue 20 ("mutation testing as a habit"): every mutant of the reference core
modules must be killed by the conformance suite, or be triaged as equivalent
with a reason. Not part of any default run (it takes tens of minutes)::

    nice -n 10 python scripts/mutation.py                     # smoke, default modules
    python scripts/mutation.py --profile ci --out mutation-ci # the ci profile
    python scripts/mutation.py --list                         # the mutants, not run
    python scripts/mutation.py --modules convledger/batch.py --limit 20
    python scripts/mutation.py --package sqlite --sample 40 --seed 37 --out OUT
    python scripts/mutation.py --package sqlite --sample 40 --seed 37 --out OUT --report-only

How it works, in four steps:

1. **Mutants.** Each module (a path under ``reference/``) is parsed; a
   deterministic walk of its AST yields every mutation point (below), skipping
   docstrings, annotations, ``if TYPE_CHECKING`` blocks and string literals.
   A mutant is (module, ordinal in that walk); it is applied in memory by an
   import hook (``sys.meta_path``) in a child process, so no file of the
   working tree is ever changed and a crash leaves nothing behind.
2. **Coverage.** One child runs every check of the suite, one at a time, on the
   unmutated :class:`convledger.memory.MemoryStore` under a line tracer and
   records, per check, the lines of the mutated modules it executed and its
   duration (cached in ``OUT/coverage.json`` for the same sources and profile).
   Every check must pass there, or the run stops.
3. **Runs.** For each mutant a child (``nice``, one at a time by default) loads
   the mutant and runs, through :func:`convledger_conformance.runner.run_suite`
   (``--profile``, derandomized, unshrunk), only the checks that execute the
   mutated lines, fastest first, and stops at the first failed check: the
   mutant is **killed**. A check that does not execute the mutated code runs
   the same derandomized examples as on the clear store and passes again, so
   skipping it cannot turn a kill into a survival; lines run at import time
   (module bodies, defaults, class bodies) select every check. A mutant whose
   lines no check executes **survived** without a run ("not executed"). A check
   over 20 s + 10 x its own time on the clear store, or a child over its limit
   (``--timeout``, or 60 s + 4 x the baseline time of its checks), is a
   **timeout**; the suite has no per-call time limit for an in-process store, so
   a timeout is reported apart from the kills. A mutant the suite gives no
   verdict on is an **error**, not a kill: the store cannot be imported, the
   child crashed before answering, the runner raised, or a check was not run
   because the suite's own helper call (reference code it imports) broke.
   Each child has its own ``TMPDIR`` and, for a PostgreSQL store, its own
   schema prefix (``CONVLEDGER_PG_SCHEMA_PREFIX``, PGS-051); the parent removes
   the folder and drops the schemas after the child, whatever the mutant did.
4. **Triage.** A survivor listed in the triage file (``--triage``, default
   ``scripts/mutation_triage.toml``) is **equivalent**: the entry names the
   file, the mutated line's text, the mutation and the reason it cannot change
   anything the spec constrains. Entries are matched by text, not line number,
   so they hold while the module is edited elsewhere; an entry that matches a
   killed mutant, or no mutant, is reported as stale.

Results go to ``OUT/results.jsonl`` as they come (a rerun resumes: a mutant
already there with the same module source is not run again; ``--fresh``
discards them; after a change of the suite's sources every mutant runs again,
or with ``--keep-kills`` only those not killed before), then
``OUT/report.json`` and ``OUT/report.md`` (counts, kill rate, and a table of
every mutant that was not killed). Kill rate =
killed / (all - equivalent).

Mutation operators (``OPERATORS``): comparison swaps (``<``/``<=``, ``>``/``>=``,
``==``/``!=``, ``is``/``is not``, ``in``/``not in``), arithmetic and set
operators (``+``/``-``, ``*``->``//``, ``//``->``*``, ``%``->``//``, ``|``/``&``),
augmented assignments (``+=``/``-=``), ``and``/``or``, removal of ``not`` and
of unary ``-``, integer constants ``n``->``n + 1``, ``True``/``False``,
negation of a bare ``if``/``while``/conditional-expression test, deletion of
a call statement, ``return X``->``return None``, ``break``/``continue``.

Why this script rather than mutmut or cosmic-ray: the test command is the
conformance CLI against an in-process store, not pytest; mutmut 3 runs pytest
only and rewrites the sources into ``mutants/``; cosmic-ray takes any command
but writes each mutant into the working tree and runs the whole suite (about
30 s at smoke) per mutant with no way to stop at the first failed check or to
run only the checks that reach the mutated lines, which this script does with
the suite's own runner.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "reference"
DEFAULT_MODULES = (
    "convledger/memory.py",
    "convledger/store_base.py",
    "convledger/batch.py",
    "convledger/replay.py",
)
"""The modules of the first triaged run (docs/mutation.md). The second run's are named with
``--modules``: ``convledger/envelope.py``, ``convledger/projections/fold.py``,
``convledger/spills/operations.py``, ``convledger/spills/store.py``, and
``convledger/projections/operations.py`` with ``--store convledger.sqlite:new_file_store`` (the
SQL stores' catch-up); ``convledger/limits.py`` is not run yet."""
DEFAULT_STORE = "convledger.memory:MemoryStore"
PACKAGES: dict[str, tuple[str, str]] = {
    "runtime": ("convledger/runtime", "convledger.memory:MemoryStore"),
    "sqlite": ("convledger/sqlite", "convledger.sqlite:new_file_store"),
    "postgres": ("convledger/postgres", "convledger.postgres:new_schema_store"),
}
"""``--package NAME``: every module of a package of the reference, and the store whose
checks reach it (the runtime rules through MemoryStore; PostgreSQL needs
``CONVLEDGER_PG_DSN``). Issue 37 extended the runs to these three packages."""
DEFAULT_TRIAGE = ROOT / "scripts" / "mutation_triage.toml"
KILLED, SURVIVED, TIMEOUT, ERROR, EQUIVALENT = (
    "killed", "survived", "timeout", "error", "equivalent"
)
STATUSES = (KILLED, SURVIVED, TIMEOUT, ERROR, EQUIVALENT)
PG_PREFIX = "convledger_mut_"
"""Schemas of a mutant's child: ``convledger_mut_<parent pid>_<n>_<uuid>`` (PGS-051's prefix
variable), dropped by the parent after the child, whatever the mutant did to the dropping."""
IMPORT_BUCKET = "<import>"


# -- mutation points ------------------------------------------------------------------------

COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
}
SYMBOL = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.BitOr: "|",
    ast.BitAnd: "&",
}
OPERATORS = (
    "compare",
    "binop",
    "augassign",
    "boolop",
    "not",
    "negative",
    "int",
    "bool",
    "negate-test",
    "delete-call",
    "return-none",
    "break-continue",
)


@dataclass(frozen=True)
class Point:
    """Where a node sits: its parent and the field (and list index) holding it."""

    node: ast.AST
    parent: ast.AST
    name: str
    index: int | None

    def replace(self, new: ast.AST) -> None:
        if self.index is None:
            setattr(self.parent, self.name, new)
        else:
            getattr(self.parent, self.name)[self.index] = new


Apply = Callable[[], None]


def _is_docstring(point: Point) -> bool:
    node = point.node
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


SKIPPED_FIELDS = {"annotation", "returns", "type_comment", "decorator_list"}


def _points(tree: ast.AST) -> Iterator[Point]:
    """Every node that may be mutated, in a fixed pre-order."""

    def walk(parent: ast.AST) -> Iterator[Point]:
        for name, value in ast.iter_fields(parent):
            if name in SKIPPED_FIELDS:
                continue
            items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for index, child in items:
                if not isinstance(child, ast.AST):
                    continue
                point = Point(child, parent, name, index)
                if _is_docstring(point) or _is_type_checking(child):
                    continue
                if isinstance(child, ast.Assign) and any(
                    isinstance(target, ast.Name) and target.id == "__all__"
                    for target in child.targets
                ):
                    continue
                if isinstance(child, ast.JoinedStr):
                    continue  # message text
                yield point
                yield from walk(child)

    yield from walk(tree)


def _stringy(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
    )


def _mutations(point: Point) -> list[tuple[str, str, Apply]]:
    """The (operator, description, apply) of every mutation at ``point``."""
    node = point.node
    found: list[tuple[str, str, Apply]] = []
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            swap = COMPARE_SWAPS.get(type(op))
            if swap is not None:

                def apply(
                    node: ast.Compare = node, position: int = position, swap: type[ast.cmpop] = swap
                ) -> None:
                    node.ops[position] = swap()

                found.append(("compare", f"`{SYMBOL[type(op)]}` -> `{SYMBOL[swap]}`", apply))
    elif isinstance(node, ast.BinOp):
        swap_op = BINOP_SWAPS.get(type(node.op))
        if swap_op is not None and not (
            isinstance(node.op, ast.Add | ast.Mod) and (_stringy(node.left) or _stringy(node.right))
        ):

            def apply_binop(node: ast.BinOp = node, swap: type[ast.operator] = swap_op) -> None:
                node.op = swap()

            found.append(
                ("binop", f"`{SYMBOL[type(node.op)]}` -> `{SYMBOL[swap_op]}`", apply_binop)
            )
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
        swap_aug: type[ast.operator] = ast.Sub if isinstance(node.op, ast.Add) else ast.Add

        def apply_aug(node: ast.AugAssign = node, swap: type[ast.operator] = swap_aug) -> None:
            node.op = swap()

        found.append(
            ("augassign", f"`{SYMBOL[type(node.op)]}=` -> `{SYMBOL[swap_aug]}=`", apply_aug)
        )
    elif isinstance(node, ast.BoolOp):
        other: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
        words = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")

        def apply_bool(node: ast.BoolOp = node, other: type[ast.boolop] = other) -> None:
            node.op = other()

        found.append(("boolop", f"`{words[0]}` -> `{words[1]}`", apply_bool))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        kind = "not" if isinstance(node.op, ast.Not) else "negative"
        found.append(
            (
                kind,
                f"remove `{'not ' if kind == 'not' else '-'}`",
                lambda: point.replace(node.operand),
            )
        )
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool):

            def apply_const(node: ast.Constant = node) -> None:
                node.value = not node.value

            found.append(("bool", f"`{node.value}` -> `{not node.value}`", apply_const))
        elif isinstance(node.value, int):

            def apply_int(node: ast.Constant = node) -> None:
                assert isinstance(node.value, int)
                node.value = node.value + 1

            found.append(("int", f"`{node.value}` -> `{node.value + 1}`", apply_int))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call | ast.Await):
        found.append(("delete-call", f"delete `{_short(node)}`", lambda: point.replace(ast.Pass())))
    elif (
        isinstance(node, ast.Return)
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):

        def apply_return(node: ast.Return = node) -> None:
            node.value = ast.Constant(value=None)

        found.append(("return-none", f"`{_short(node)}` -> `return None`", apply_return))
    elif isinstance(node, ast.Break | ast.Continue):
        other_stmt: ast.stmt = ast.Continue() if isinstance(node, ast.Break) else ast.Break()
        found.append(
            (
                "break-continue",
                f"`{_short(node)}` -> `{ast.unparse(other_stmt)}`",
                lambda: point.replace(other_stmt),
            )
        )
    if isinstance(node, ast.If | ast.While | ast.IfExp) and not isinstance(
        node.test, ast.Compare | ast.BoolOp | ast.UnaryOp | ast.Constant
    ):

        def apply_negate(node: ast.If | ast.While | ast.IfExp = node) -> None:
            node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)

        found.append(("negate-test", f"`{_short(node.test)}` -> `not ...`", apply_negate))
    return found


def _short(node: ast.AST, width: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True)
class Mutant:
    """One mutation of one module."""

    module: str  # path under reference/, e.g. convledger/memory.py
    ordinal: int  # position in the walk of _candidates
    line: int
    end_line: int
    operator: str
    mutation: str
    text: str  # the mutated line, stripped
    occurrence: int  # how many earlier mutants of the module share (text, mutation)

    @property
    def ident(self) -> str:
        return f"{self.module}:{self.line}#{self.ordinal}"

    @property
    def key(self) -> tuple[str, str, str, int]:
        """What the triage file matches: independent of line numbers."""
        return (self.module, self.text, self.mutation, self.occurrence)


def _candidates(tree: ast.AST) -> Iterator[tuple[Point, str, str, Apply]]:
    for point in _points(tree):
        for operator, description, apply in _mutations(point):
            yield point, operator, description, apply


def mutants_of(module: str) -> list[Mutant]:
    """Every mutant of ``module`` (a path under ``reference/``), in walk order."""
    source = (REFERENCE / module).read_text("utf-8")
    lines = source.splitlines()
    seen: dict[tuple[str, str], int] = {}
    found = []
    for ordinal, (point, operator, description, _apply) in enumerate(
        _candidates(ast.parse(source))
    ):
        line = getattr(point.node, "lineno", 0)
        end = getattr(point.node, "end_lineno", line) or line
        text = lines[line - 1].strip() if line else ""
        occurrence = seen.get((text, description), 0)
        seen[(text, description)] = occurrence + 1
        found.append(Mutant(module, ordinal, line, end, operator, description, text, occurrence))
    return found


def mutated_code(module: str, ordinal: int) -> CodeType:
    """The code object of ``module`` with mutation ``ordinal`` applied."""
    path = REFERENCE / module
    tree = ast.parse(path.read_text("utf-8"))
    for index, (_point, _operator, _description, apply) in enumerate(_candidates(tree)):
        if index == ordinal:
            apply()
            break
    else:
        raise SystemExit(f"{module} has no mutant #{ordinal}")
    return compile(ast.fix_missing_locations(tree), str(path), "exec")


def module_name(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


class _MutantLoader(importlib.abc.Loader):
    def __init__(self, code: CodeType) -> None:
        self.code = code

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self.code, module.__dict__)


class _MutantFinder(importlib.abc.MetaPathFinder):
    """Serves one module from a mutated code object, every other import as usual."""

    def __init__(self, name: str, path: Path, code: CodeType) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=_MutantLoader(self.code)
        )


# -- the child: coverage run and mutant runs -----------------------------------------------


def _checks(names: Sequence[str] | None) -> list[Any]:
    from convledger_conformance.registry import all_checks

    every = list(all_checks())
    if names is None:
        return every
    by_name = {item.name: item for item in every}
    return [by_name[name] for name in names]


def _run_one(factory: Any, check: Any, profile: str) -> tuple[str, str]:
    """(status, first line of the failure message) of one check, through the suite's runner."""
    from convledger_conformance.report import FAILED
    from convledger_conformance.runner import run_suite

    report = run_suite(factory, profile=profile, checks=[check], derandomize=True, shrink=False)
    for result in report.checks:
        if result.status == FAILED:
            message = (result.message or result.detail).strip().splitlines()
            return FAILED, f"{result.name}: {message[0] if message else ''}"[:300]
    for result in report.checks:
        if result.name == check.name:
            message = (result.message or "").strip().splitlines()
            blocked = " (helper blocked)" if getattr(result, "blocked_by", None) else ""
            return result.status, f"{message[0] if message else ''}{blocked}"[:300]
    return "passed", ""


def child_coverage(
    modules: Sequence[str], store: str, profile: str, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Run every check on the clear store, recording lines executed per check."""
    files = {str(REFERENCE / module): module for module in modules}
    hits: dict[str, dict[str, set[int]]] = {}
    bucket = [IMPORT_BUCKET]

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            hits.setdefault(bucket[0], {}).setdefault(files[frame.f_code.co_filename], set()).add(
                frame.f_lineno
            )
        return local

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename in files:
            hits.setdefault(bucket[0], {}).setdefault(files[frame.f_code.co_filename], set()).add(
                frame.f_lineno
            )
            return local
        return None

    sys.settrace(tracer)
    threading.settrace(tracer)
    from convledger_conformance.factories import load_factory
    from convledger_conformance.runsettings import use_user_cache

    use_user_cache()

    factory = load_factory(store)
    checks = _checks(names)
    result: dict[str, Any] = {"checks": {}}
    for item in checks:
        bucket[0] = item.name
        started = time.perf_counter()
        status, message = _run_one(factory, item, profile)
        result["checks"][item.name] = {
            "status": status,
            "message": message,
            "duration": time.perf_counter() - started,
        }
    sys.settrace(None)
    threading.settrace(None)  # type: ignore[arg-type,unused-ignore]
    result["lines"] = {
        name: {module: sorted(lines) for module, lines in per.items()} for name, per in hits.items()
    }
    return result


def child_mutant(
    module: str, ordinal: int, store: str, profile: str, names: Sequence[str]
) -> dict[str, Any]:
    """Run ``names`` against the mutant, stopping at the first failed check.

    A name may carry a time limit in seconds (``name=limit``): a check still running
    then ends the child with a ``timeout`` reply (SIGALRM), so a mutant that loops
    forever costs one check's limit, not the whole budget.
    """
    limits = {}
    for token in names:
        name, _, limit = token.partition("=")
        limits[name] = float(limit) if limit else 0.0
    code = mutated_code(module, ordinal)
    sys.meta_path.insert(0, _MutantFinder(module_name(module), REFERENCE / module, code))
    from convledger_conformance.factories import FactoryLoadError, load_factory
    from convledger_conformance.results import FAILED, NOT_RUN, PASSED
    from convledger_conformance.runsettings import use_user_cache

    use_user_cache()
    notes: list[str] = []
    try:
        factory = load_factory(store)
    except FactoryLoadError as error:  # the mutant breaks the import: the suite cannot run
        return {"status": ERROR, "by": f"the store cannot be loaded: {error}"[:300], "ran": 0}
    ran = 0
    for item in _checks(list(limits)):
        ran += 1
        if limits[item.name]:
            _alarm(limits[item.name], item.name, ran)
        try:
            status, message = _run_one(factory, item, profile)
        except Exception as error:  # the runner itself was broken by the mutant
            return {"status": ERROR, "by": f"{item.name}: suite error {error!r}"[:300], "ran": ran}
        signal.setitimer(signal.ITIMER_REAL, 0)
        if status == FAILED:
            return {"status": KILLED, "by": message, "ran": ran}
        if status == NOT_RUN and message.endswith("(helper blocked)"):
            # the suite's own helper call (reference code it imports) broke: no verdict
            return {"status": ERROR, "by": f"{item.name}: {message}"[:300], "ran": ran}
        if status != PASSED:
            notes.append(f"{item.name}: {status} {message}"[:200])
    return {"status": SURVIVED, "by": "; ".join(notes)[:300], "ran": ran}


def _alarm(seconds: float, name: str, ran: int) -> None:
    def expired(signum: int, frame: object) -> None:
        reply = {"status": TIMEOUT, "by": f"{name}: over {seconds:.0f} s", "ran": ran}
        sys.stdout.write("\n" + json.dumps(reply) + "\n")
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)


# -- the parent ------------------------------------------------------------------------------


@dataclass
class Outcome:
    ident: str
    module: str
    line: int
    operator: str
    mutation: str
    text: str
    status: str
    by: str = ""
    ran: int = 0
    seconds: float = 0.0
    source: str = ""  # sha256 of the module source the mutant was made from
    reason: str = ""  # triage reason, for an equivalent
    occurrence: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def suite_digest() -> str:
    """A digest of the conformance suite's sources: results of another suite are not reused."""
    package = ROOT / "conformance" / "convledger_conformance"
    return _digest(
        "".join(
            f"{path.relative_to(package)}\0{path.read_text('utf-8')}"
            for path in sorted(package.rglob("*.py"))
        )
    )


def _run_child(
    command: list[str], environment: dict[str, str], limit: float | None
) -> subprocess.CompletedProcess[str]:
    """Run one child; on a timeout kill its whole process group (the store's helpers too)."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=environment, start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            raise
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


_CHILDREN = iter(range(1, 2**62))


@contextlib.contextmanager
def _child_space(store: str) -> Iterator[tuple[dict[str, str], list[str]]]:
    """An environment of one child: its own TMPDIR and, for PostgreSQL, its own schema prefix.

    Whatever the mutant did to the store's own clean-up (the SQLite temporary
    folders, PGS-051's drop on close and at exit, PGS-069's guardian), the
    parent, running unmutated code, removes the folder and drops every schema
    with the child's prefix once the child has ended. The list it yields is
    filled with what had to be removed: a mutant that leaks shows there.
    """
    number = next(_CHILDREN)
    folder = Path(tempfile.mkdtemp(prefix=f"convledger-mutant-{os.getpid()}-{number}-"))
    environment = dict(os.environ, TMPDIR=str(folder))
    postgres = store.startswith("convledger.postgres")
    prefix = f"{PG_PREFIX}{os.getpid()}_{number}_"
    if postgres:
        environment["CONVLEDGER_PG_SCHEMA_PREFIX"] = prefix
    leftovers: list[str] = []
    try:
        yield environment, leftovers
    finally:
        if postgres:
            leftovers += [f"schema {name}" for name in _drop_prefixed(prefix)]
        leftovers += [f"file {path.name}" for path in folder.iterdir()][:5]
        shutil.rmtree(folder, ignore_errors=True)


def _drop_prefixed(prefix: str) -> list[str]:
    """Drop every schema named ``prefix...`` of ``CONVLEDGER_PG_DSN``; their names.

    Waits up to 10 s for the child's guardian (PGS-069) first, so a schema is
    reported as left behind only when neither the child nor its guardian dropped it.
    """
    import psycopg

    dsn = os.environ.get("CONVLEDGER_PG_DSN") or "postgresql://postgres@127.0.0.1:5432/postgres"
    pattern = prefix.replace("_", "\\_") + "%"
    query = "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s ORDER BY nspname"
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as connection:
        deadline = time.monotonic() + 10
        while True:
            names = [row[0] for row in connection.execute(query, (pattern,)).fetchall()]
            if not names or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for name in names:
            connection.execute(
                psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    psycopg.sql.Identifier(name)
                )
            )
    return names


def suite_imports() -> set[str]:
    """Reference modules whose functions the suite itself calls (it imports them).

    A mutant of such a module changes the suite's oracle along with the store
    (the runtime model calls ``convledger.runtime.rules.decide``): its survival
    may be the model agreeing with the mutant, which the report flags.
    """
    found: set[str] = set()
    package = ROOT / "conformance" / "convledger_conformance"
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if node.module != "convledger" and not node.module.startswith("convledger."):
                continue
            for alias in node.names:
                try:
                    value = getattr(importlib.import_module(node.module), alias.name)
                except (ImportError, AttributeError):
                    found.add(node.module)
                    continue
                if isinstance(value, ModuleType):
                    found.add(value.__name__)
                elif isinstance(value, FunctionType):  # a class is a type, not an oracle
                    found.add(value.__module__)
    return found


def _child_command(nice: int, *arguments: str) -> list[str]:
    command = [sys.executable, str(Path(__file__).resolve()), "_child", *arguments]
    return (["nice", "-n", str(nice)] if nice else []) + command


def load_triage(path: Path) -> dict[tuple[str, str, str, int], str]:
    """``(module, line text, mutation, occurrence) -> reason`` from the triage TOML file.

    ``occurrence`` counts the earlier mutants of the file with the same line text and
    mutation (default 0); ``occurrence = "all"`` (key -1 here) matches every one of them.
    """
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text("utf-8"))
    return {
        (
            entry["file"],
            entry["line"].strip(),
            entry["mutation"],
            -1 if entry.get("occurrence") == "all" else int(entry.get("occurrence", 0)),
        ): entry["reason"]
        for entry in data.get("equivalent", [])
    }


def _triaged(
    triage: dict[tuple[str, str, str, int], str], key: tuple[str, str, str, int]
) -> tuple[str, str, str, int] | None:
    """The triage entry matching ``key``: its own occurrence, else an ``all`` entry."""
    if key in triage:
        return key
    every = (*key[:3], -1)
    return every if every in triage else None


def coverage(
    modules: Sequence[str],
    store: str,
    profile: str,
    out: Path,
    nice: int,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    sources = {module: _digest((REFERENCE / module).read_text("utf-8")) for module in modules}
    selection = ",".join(names) if names else ""
    cache = out / "coverage.json"
    if cache.exists():
        cached = json.loads(cache.read_text("utf-8"))
        if (
            cached.get("sources"),
            cached.get("profile"),
            cached.get("selection", ""),
            cached.get("suite"),
        ) == (sources, profile, selection, suite_digest()):
            return dict(cached)
    print(f"coverage run of every check at {profile} (once per source change)...", flush=True)
    started = time.perf_counter()
    with _child_space(store) as (environment, leftovers):
        done = _run_child(
        _child_command(
            nice,
            "coverage",
            "--store",
            store,
            "--profile",
            profile,
            "--checks",
            selection,
            *modules,
        ),
        environment,
        None,
    )
    if leftovers:
        print(f"the clear store left {leftovers} behind (removed)", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"the coverage run failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    failed = [name for name, item in result["checks"].items() if item["status"] == "failed"]
    if failed:
        raise SystemExit(f"the clear store fails checks {failed}: fix that first")
    result.update(
        sources=sources,
        profile=profile,
        selection=selection,
        suite=suite_digest(),
        seconds=time.perf_counter() - started,
    )
    cache.write_text(json.dumps(result), "utf-8")
    return result


def selected_checks(mutant: Mutant, cover: dict[str, Any]) -> list[str]:
    """The passing checks that execute a line of the mutant, fastest first (all for import)."""
    lines = set(range(mutant.line, mutant.end_line + 1))
    passing = {name for name, item in cover["checks"].items() if item["status"] == "passed"}
    imported = set(cover["lines"].get(IMPORT_BUCKET, {}).get(mutant.module, []))
    if lines & imported:
        chosen = passing
    else:
        chosen = {
            name
            for name in passing
            if lines & set(cover["lines"].get(name, {}).get(mutant.module, []))
        }
    return sorted(chosen, key=lambda name: cover["checks"][name]["duration"])


def check_limit(cover: dict[str, Any], name: str) -> float:
    """Seconds one check may take on a mutant: 20 s + 10 x its time on the clear store."""
    return 20 + 10 * float(cover["checks"][name]["duration"])


def run_mutant(mutant: Mutant, cover: dict[str, Any], args: argparse.Namespace) -> Outcome:
    names = selected_checks(mutant, cover)
    outcome = Outcome(
        mutant.ident,
        mutant.module,
        mutant.line,
        mutant.operator,
        mutant.mutation,
        mutant.text,
        SURVIVED,
        occurrence=mutant.occurrence,
    )
    if not names:
        outcome.by = "not executed by any check"
        return outcome
    budget = sum(cover["checks"][name]["duration"] for name in names)
    limit = args.timeout if args.timeout else 60 + 4 * budget
    started = time.perf_counter()
    try:
        with _child_space(args.store) as (environment, leftovers):
            done = _run_child(
            _child_command(
                args.nice,
                "mutant",
                "--store",
                args.store,
                "--profile",
                args.profile,
                mutant.module,
                str(mutant.ordinal),
                *(f"{name}={check_limit(cover, name):.0f}" for name in names),
            ),
            environment,
            limit,
            )
        if leftovers:
            outcome.extra["left_behind"] = leftovers
    except subprocess.TimeoutExpired:
        outcome.status, outcome.by = TIMEOUT, f"over {limit:.0f} s"
    else:
        try:
            reply = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            reply = {  # a crash is no verdict of the suite: not counted as a kill
                "status": ERROR,
                "by": f"the child exited {done.returncode}: "
                + (done.stderr.strip().splitlines() or [""])[-1][-200:],
                "ran": 0,
            }
        outcome.status, outcome.by, outcome.ran = reply["status"], reply["by"], reply["ran"]
    outcome.seconds = time.perf_counter() - started
    return outcome


def summarize(
    outcomes: list[Outcome], triage: dict[tuple[str, str, str, int], str], mutants: list[Mutant]
) -> dict[str, Any]:
    counts = {status: 0 for status in STATUSES}
    matched = set()
    stale = set()
    for outcome in outcomes:
        entry = _triaged(
            triage, (outcome.module, outcome.text, outcome.mutation, outcome.occurrence)
        )
        if entry is not None:
            matched.add(entry)
            if outcome.status == SURVIVED:
                outcome.status, outcome.reason = EQUIVALENT, triage[entry]
            elif outcome.status == KILLED:
                outcome.extra["stale_triage"] = True
                stale.add(entry)
        counts[outcome.status] += 1
    keys = {mutant.key for mutant in mutants}
    wide = {(*key[:3], -1) for key in keys}
    modules = {mutant.module for mutant in mutants}
    stale |= {key for key in triage if key[0] in modules and key not in keys and key not in wide}
    relevant = len(outcomes) - counts[EQUIVALENT]
    return {
        "counts": counts,
        "total": len(outcomes),
        "kill_rate": counts[KILLED] / relevant if relevant else 1.0,
        "detected_rate": (counts[KILLED] + counts[TIMEOUT] + counts[ERROR]) / relevant
        if relevant
        else 1.0,
        "stale_triage": [list(key) for key in sorted(stale)],
    }


def render_markdown(
    summary: dict[str, Any], outcomes: list[Outcome], args: argparse.Namespace, wall: float
) -> str:
    counts = summary["counts"]
    lines = [
        f"# Mutation run: profile {args.profile}, store `{args.store}`",
        "",
        f"Modules: {', '.join(f'`{m}`' for m in args.modules)}. "
        + (
            "Rewritten from earlier results (--report-only); `results.jsonl` holds each "
            "mutant's time."
            if args.report_only
            else f"Wall time of the mutant runs (this invocation): {wall:.0f} s."
        ),
        "",
        f"Mutants: {summary.get('population', summary['total'])} in these modules; "
        + (
            f"a sample of {summary['total']} drawn with seed {summary['seed']}."
            if summary.get("seed") is not None and summary.get("sample")
            else f"a sample of {summary['total']}, every k-th."
            if summary.get("sample")
            else "all run."
        ),
        "",
        "| mutants | killed | survived | timeout | error | equivalent | kill rate |",
        "|---|---|---|---|---|---|---|",
        f"| {summary['total']} | {counts[KILLED]} | {counts[SURVIVED]} | {counts[TIMEOUT]} "
        f"| {counts[ERROR]} | {counts[EQUIVALENT]} | {100 * summary['kill_rate']:.1f} % |",
        "",
        "Kill rate = killed / (mutants - equivalent). Killed: a check of the suite reported a "
        "failure. Error: no verdict of the suite (the store cannot be imported, the child "
        "crashed, the runner raised, or the suite's own helper call broke); not a kill.",
        "",
    ]
    per_module: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        row = per_module.setdefault(outcome.module, {status: 0 for status in STATUSES})
        row[outcome.status] += 1
    lines += [
        "| module | killed | survived | timeout | error | equivalent |",
        "|---|---|---|---|---|---|",
    ]
    for module, row in sorted(per_module.items()):
        lines.append(
            f"| `{module}` | {row[KILLED]} | {row[SURVIVED]} | {row[TIMEOUT]} | {row[ERROR]} "
            f"| {row[EQUIVALENT]} |"
        )
    rest = [o for o in outcomes if o.status != KILLED]
    if rest:
        lines += [
            "",
            "## Mutants not killed",
            "",
            "A mark (S) after file:line: the suite imports code of that module (its oracle may "
            "share the mutation).",
            "",
            "| status | file:line | mutation | line | reason / note |",
            "|---|---|---|---|---|",
        ]
        for o in sorted(rest, key=lambda o: (STATUSES.index(o.status), o.module, o.line)):
            note = " ".join((o.reason or o.by).split()).replace("|", "\\|")
            text = o.text.replace("|", "\\|")
            mark = " (S)" if o.extra.get("suite_imports") else ""
            lines.append(
                f"| {o.status} | `{o.module}:{o.line}`{mark} | {o.mutation} | `{text}` | {note} |"
            )
    if summary["stale_triage"]:
        lines += ["", "## Stale triage entries (killed, or matching no mutant)", ""]
        lines += [f"- `{key[0]}`: `{key[1]}` {key[2]}" for key in summary["stale_triage"]]
    return "\n".join(lines) + "\n"


def package_modules(name: str) -> list[str]:
    """Every module of reference package ``name`` (paths under reference/), sorted."""
    folder = PACKAGES[name][0]
    return sorted(str(path.relative_to(REFERENCE)) for path in (REFERENCE / folder).glob("*.py")
                  if path.name != "__init__.py")


def sampled(mutants: list[Mutant], count: int, seed: int | None = None) -> list[Mutant]:
    """``count`` mutants of ``mutants``, in walk order.

    With ``seed``: the first ``count`` of the list's positions shuffled by
    ``random.Random(seed)``, a uniform random sample; the same seed and sources
    give the same sample, and a larger sample with the same seed holds the
    smaller one (so a rerun with a larger ``count`` reuses the results). Without:
    spread evenly (every k-th, the first included).
    """
    if count <= 0 or count >= len(mutants):
        return mutants
    if seed is not None:
        order = list(range(len(mutants)))
        random.Random(seed).shuffle(order)
        chosen = set(order[:count])
        return [mutant for index, mutant in enumerate(mutants) if index in chosen]
    step = len(mutants) / count
    return [mutants[int(index * step)] for index in range(count)]


def parent(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.package:
        args.modules = package_modules(args.package)
        args.store = PACKAGES[args.package][1]
    mutants = [mutant for module in args.modules for mutant in mutants_of(module)]
    if args.operators:
        mutants = [m for m in mutants if m.operator in args.operators]
    if args.list:
        for mutant in mutants:
            print(f"{mutant.ident}\t{mutant.operator}\t{mutant.mutation}\t{mutant.text}")
        print(f"{len(mutants)} mutants")
        return 0
    every = mutants  # a triage entry is stale only when it matches none of these
    if args.only:
        mutants = [m for m in mutants if m.ident in args.only]
    if args.limit:
        mutants = mutants[: args.limit]
    population = len(mutants)
    mutants = sampled(mutants, args.sample, args.seed)
    if args.report_only:
        return report_only(args, mutants, every, population)
    cover = coverage(args.modules, args.store, args.profile, out, args.nice, args.checks)
    sources = {module: _digest((REFERENCE / module).read_text("utf-8")) for module in args.modules}
    results = out / "results.jsonl"
    done: dict[str, Outcome] = {}
    suite = suite_digest()
    if results.exists() and not args.fresh:
        for line in results.read_text("utf-8").splitlines():
            outcome = Outcome(**json.loads(line))
            same_suite = outcome.extra.get("suite") == suite
            if (
                outcome.source == sources.get(outcome.module)
                and outcome.extra.get("profile") == args.profile
                and (same_suite or (args.keep_kills and outcome.status == KILLED))
            ):
                done[outcome.ident] = outcome
    elif results.exists():
        results.unlink()
    shared = suite_imports()
    started = time.perf_counter()
    outcomes = []
    with results.open("a", encoding="utf-8") as sink:
        for number, mutant in enumerate(mutants, 1):
            previous = done.get(mutant.ident)
            if previous is not None and previous.mutation == mutant.mutation:
                outcomes.append(previous)
                continue
            outcome = run_mutant(mutant, cover, args)
            if module_name(mutant.module) in shared:
                outcome.extra["suite_imports"] = True
            outcome.source = sources[mutant.module]
            outcome.extra["profile"] = args.profile
            outcome.extra["suite"] = suite
            outcomes.append(outcome)
            sink.write(json.dumps(asdict(outcome)) + "\n")
            sink.flush()
            print(
                f"[{number}/{len(mutants)}] {outcome.status:8} {mutant.ident} "
                f"{mutant.mutation} ({outcome.seconds:.1f} s, {outcome.ran} checks) "
                f"{outcome.by[:100]}",
                flush=True,
            )
    wall = time.perf_counter() - started
    return write_reports(args, outcomes, every, wall, cover.get("seconds"), population)


def write_reports(
    args: argparse.Namespace,
    outcomes: list[Outcome],
    every: list[Mutant],
    wall: float,
    coverage_seconds: float | None,
    population: int,
) -> int:
    """Triage ``outcomes``, write ``report.json`` and ``report.md``; the exit status."""
    out: Path = args.out
    triage = load_triage(args.triage)
    summary = summarize(outcomes, triage, every)
    summary.update(
        profile=args.profile,
        store=args.store,
        modules=list(args.modules),
        wall_seconds=wall,
        coverage_seconds=coverage_seconds,
        population=population,
        sample=args.sample,
        seed=args.seed,
    )
    report = {"summary": summary, "mutants": [asdict(o) for o in outcomes]}
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", "utf-8")
    (out / "report.md").write_text(render_markdown(summary, outcomes, args, wall), "utf-8")
    counts = summary["counts"]
    print(
        f"{summary['total']} mutants: {counts[KILLED]} killed, {counts[SURVIVED]} survived, "
        f"{counts[TIMEOUT]} timeout, {counts[ERROR]} error, {counts[EQUIVALENT]} equivalent; "
        "kill rate "
        f"{100 * summary['kill_rate']:.1f} %; report in {out / 'report.md'}"
    )
    return 0 if counts[SURVIVED] == counts[TIMEOUT] == counts[ERROR] == 0 else 1


def report_only(
    args: argparse.Namespace, mutants: list[Mutant], every: list[Mutant], population: int
) -> int:
    """``--report-only``: the reports of the results already in OUT, with today's triage file.

    A result counts when it was made from the module's present source at this
    profile, whatever the suite was then (``extra.suite`` says which); a mutant
    without one is left out and named. Nothing runs.
    """
    sources = {module: _digest((REFERENCE / module).read_text("utf-8")) for module in args.modules}
    found: dict[str, Outcome] = {}
    results = args.out / "results.jsonl"
    lines = results.read_text("utf-8").splitlines() if results.exists() else []
    for line in lines:
        outcome = Outcome(**json.loads(line))
        if outcome.source == sources.get(outcome.module) and (
            outcome.extra.get("profile") == args.profile
        ):
            found[outcome.ident] = outcome
    outcomes = [found[m.ident] for m in mutants if m.ident in found]
    missing = [m.ident for m in mutants if m.ident not in found]
    if missing:
        print(f"no result yet for {len(missing)} mutants: {' '.join(missing)}")
    return write_reports(args, outcomes, every, 0.0, None, population)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/mutation.py",
        description="Mutate the reference store's core modules and run the conformance "
        "suite (derandomized, unshrunk) against MemoryStore with each mutant; report "
        "killed / survived / timeout / equivalent mutants. Exit 1 when a mutant "
        "survived or timed out untriaged.",
        epilog=__doc__.split("How it works")[1].split("Why this script")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--modules",
        nargs="+",
        default=list(DEFAULT_MODULES),
        metavar="PATH",
        help="modules to mutate, paths under reference/ (default: %(default)s)",
    )
    parser.add_argument(
        "--profile",
        choices=("smoke", "ci", "thorough"),
        default="smoke",
        help="the suite's profile (default smoke)",
    )
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help="MODULE:FACTORY of the store under test (default %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "mutation-results",
        help="folder for coverage.json, results.jsonl, report.json and "
        "report.md (default mutation-results/)",
    )
    parser.add_argument(
        "--triage",
        type=Path,
        default=DEFAULT_TRIAGE,
        help="TOML file of mutants triaged as equivalent (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=0,
        help="seconds per mutant (default 60 + 4 x the baseline time of the checks it runs)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=10,
        help="niceness of the child processes (default 10; 0: not niced)",
    )
    parser.add_argument(
        "--operators", nargs="+", choices=OPERATORS, help="only these mutation operators"
    )
    parser.add_argument("--limit", type=int, default=0, help="run only the first N mutants")
    parser.add_argument(
        "--package",
        choices=sorted(PACKAGES),
        help="mutate every module of this reference package, against the store that reaches "
        "it (replaces --modules and --store)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        help="run N mutants spread evenly over the list (every k-th), for a score on a "
        "sample when the whole run is too long",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="with --sample: draw the sample at random with this seed (reproducible for the "
        "same sources) instead of every k-th",
    )
    parser.add_argument(
        "--only", nargs="+", metavar="IDENT", help="run only these mutants (as --list names them)"
    )
    parser.add_argument(
        "--checks",
        nargs="+",
        metavar="NAME",
        help="use only these checks of the suite (a quick look; the default is every check)",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="discard earlier results instead of resuming"
    )
    parser.add_argument(
        "--keep-kills",
        action="store_true",
        help="after the suite changed, reuse earlier kills and rerun only the other mutants "
        "(results of the same suite are always reused)",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: write report.json and report.md from the results in OUT with the "
        "triage file as it is now (results of an earlier suite included)",
    )
    return parser


def child(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutation.py _child")
    parser.add_argument("mode", choices=("coverage", "mutant"))
    parser.add_argument("--store", required=True)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--checks", default="")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_intermixed_args(argv)
    if args.mode == "coverage":
        names = args.checks.split(",") if args.checks else None
        reply = child_coverage(args.rest, args.store, args.profile, names)
    else:
        module, ordinal, *names = args.rest
        reply = child_mutant(module, int(ordinal), args.store, args.profile, names)
    sys.stdout.write("\n" + json.dumps(reply) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["_child"]:
        return child(arguments[1:])
    args = build_parser().parse_args(arguments)
    # SIGTERM ends the parent through SystemExit, so subprocess.run kills the running child
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    return parent(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
