"""``convledger-conformance new-store PATH``: an implementer's starting point, made from the bases.

::

    convledger-conformance new-store PATH [--capabilities ledger,transitions,...]

writes a runnable Python module holding one store class with every hook of
the declared capabilities' abstract bases, each documented with what it
receives, what it must return, its contract and the spec ids that bind it,
and each raising ``NotImplementedError`` with its name, so that a run of the
suite against the skeleton reports failures naming the hooks still to write.

Nothing here is written by hand: the skeleton is read from the bases
themselves, so it cannot drift from them.

====================  ========================================================
what                  where it is read from
====================  ========================================================
the hooks             the base's abstract methods (:data:`BASES`); for a
                      capability without a base (``persistence``,
                      ``multi_process``), its protocol's own methods
                      (:data:`convledger.interface.PROTOCOLS`)
receives, returns     the hook's signature, its annotations imported from the
                      modules that define them
contract              the hook's row in its module's hook table, and its
                      docstring
spec ids              every id cited in that row, the docstring, the comment
                      above the hook, and the public operations of the base
                      that call the hook
====================  ========================================================

``migration`` has no operations (it is a property of a SQLite file, chapter
SQL) and is refused, as is an unknown capability or a PATH that exists
already: a refusal writes nothing.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import re
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

import attrs

from convledger.capabilities import Capability
from convledger.host.store import FactRowsBase
from convledger.interface import PROTOCOLS
from convledger.projections.store import ProjectionsBase
from convledger.runtime.store import PurgeBase, TransitionsBase
from convledger.search.store import SearchBase
from convledger.spills.store import SpillsBase
from convledger.store_base import StoreBase
from convledger.store_interface import LedgerStore

BASES: Final[dict[Capability, type]] = {
    Capability.LEDGER: StoreBase,
    Capability.TRANSITIONS: TransitionsBase,
    Capability.PURGE: PurgeBase,
    Capability.PROJECTIONS: ProjectionsBase,
    Capability.SPILLS: SpillsBase,
    Capability.SEARCH: SearchBase,
    Capability.FACT_ROWS: FactRowsBase,
}
"""The abstract base of each capability that has one (ARCHITECTURE.md, the capability table)."""

CLASS_NAME: Final = "MyStore"
_ID: Final = re.compile(r"\b[A-Z]{3}-\d{3}\b")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_WIDTH: Final = 88
"""The skeleton's line length: ruff's default, so it lints clean as written."""


class SkeletonError(ValueError):
    """The capabilities or the path asked for cannot make a skeleton; nothing was written."""


@attrs.frozen
class Hook:
    """One method the skeleton's class must implement, read from a base or a protocol."""

    name: str
    capability: Capability
    owner: str
    """The base (or protocol) that declares it."""
    parameters: tuple[str, ...]
    """``name: annotation`` of each parameter after ``self``, ``*`` where keywords start."""
    returns: str
    contract: str
    ids: tuple[str, ...]
    names: tuple[tuple[str, str], ...]
    """``(module, name)`` of every name its annotations use."""


def capabilities_from(text: str) -> tuple[Capability, ...]:
    """``ledger,transitions`` as capabilities in table order, ``ledger`` always included."""
    known = {capability.value: capability for capability in Capability}
    asked = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(asked - set(known))
    if unknown:
        raise SkeletonError(
            f"unknown capabilities {', '.join(unknown)} (known: {', '.join(known)})"
        )
    if Capability.MIGRATION.value in asked:
        raise SkeletonError(
            "capability 'migration' has no operations: it is a property of a SQLite file "
            "(chapter SQL), not something a skeleton can hold"
        )
    asked.add(Capability.LEDGER.value)
    return tuple(capability for capability in Capability if capability.value in asked)


def hooks_of(capability: Capability) -> tuple[Hook, ...]:
    """Every hook of one capability, in source order."""
    base = BASES.get(capability)
    if base is not None:
        methods = [
            name for name in base.__dict__
            if name in getattr(base, "__abstractmethods__", frozenset())
        ]
        callers = _public_sources(base)
        table = _hook_table(sys.modules[base.__module__].__doc__ or "")
        return tuple(
            _hook(capability, base, name, table.get(name, ""), callers) for name in methods
        )
    protocol = PROTOCOLS.get(capability)
    if not isinstance(protocol, type):
        return ()
    own = [
        name for name, value in protocol.__dict__.items()
        if inspect.isfunction(value) and not name.startswith("_") and not hasattr(LedgerStore, name)
    ]
    cited = protocol.__doc__ or ""
    return tuple(_hook(capability, protocol, name, cited, {}) for name in own)


def render(capabilities: Sequence[Capability], module_name: str) -> str:
    """The text of the skeleton module for these capabilities."""
    hooks = [hook for capability in capabilities for hook in hooks_of(capability)]
    bases = [BASES[c] for c in capabilities if c in BASES and c is not Capability.LEDGER]
    bases = bases or [StoreBase]
    imports: dict[str, set[str]] = {"convledger.capabilities": {"Capability"}}
    for base in bases:
        imports.setdefault(base.__module__, set()).add(base.__name__)
    for hook in hooks:
        for module, name in hook.names:
            imports.setdefault(module, set()).add(name)
    declared = "".join(f"            Capability.{c.name},\n" for c in capabilities)
    names = ", ".join(c.value for c in capabilities)
    stdlib = [item for item in sorted(imports.items()) if _import_order(item[0])[0] == 0]
    ours = [item for item in sorted(imports.items()) if _import_order(item[0])[0] == 1]
    lines = [
        *textwrap.wrap(f'"""A skeleton store declaring {names}.', _WIDTH),
        "",
        "Written by ``convledger-conformance new-store`` from the capability bases.",
        "Implement every method that raises NotImplementedError, then run::",
        "",
        f"    PYTHONPATH=. convledger-conformance --store {module_name}:make_store --profile smoke",
        "",
        "Each failure of that run names the hook it reached.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *(f"from {module} import {', '.join(sorted(used))}" for module, used in stdlib),
        *([""] if stdlib else []),
        *(f"from {module} import {', '.join(sorted(used))}" for module, used in ours),
        "",
        "",
        f"class {CLASS_NAME}(",
        *(f"    {base.__name__}," for base in bases),
        "):",
        f'    """{len(hooks)} hooks to implement; declared: see ``declared``."""',
        "",
        "    declared = frozenset(",
        "        {",
        declared.rstrip("\n"),
        "        }",
        "    )",
        "",
        "    def __init__(self) -> None:",
        "        super().__init__()",
        "        # Your storage goes here; make_store() must return a fresh, empty store.",
    ]
    for hook in hooks:
        lines.extend(["", *_method(hook)])
    lines.extend([
        "", "",
        f"def make_store() -> {CLASS_NAME}:",
        '    """The factory the suite calls for every fresh store."""',
        f"    return {CLASS_NAME}()",
    ])
    return "\n".join(lines) + "\n"


def write(path: Path, capabilities: Sequence[Capability]) -> str:
    """Write the skeleton to ``path`` (which must not exist); return the text written."""
    module_name = path.stem
    if path.suffix != ".py" or not module_name.isidentifier() or keyword.iskeyword(module_name):
        raise SkeletonError(f"{path} must be a .py file named as a Python module")
    if path.exists():
        raise SkeletonError(f"{path} exists already; it is left as it is")
    text = render(capabilities, module_name)
    with path.open("x", encoding="utf-8") as stream:
        stream.write(text)
    return text


def _hook(
    capability: Capability, owner: type, name: str, row: str, callers: dict[str, str]
) -> Hook:
    function = owner.__dict__[name]
    signature = inspect.signature(function)
    parameters: list[str] = []
    annotations = [_annotation(signature.return_annotation)]
    keywords = False
    for parameter in list(signature.parameters.values())[1:]:
        if parameter.kind is parameter.KEYWORD_ONLY and not keywords:
            parameters.append("*")
            keywords = True
        annotations.append(_annotation(parameter.annotation))
        text = f"{parameter.name}: {annotations[-1]}"
        if parameter.default is not parameter.empty:
            text += f" = {parameter.default!r}"
        parameters.append(text)
    returns = annotations[0]
    docstring = inspect.getdoc(function) or ""
    contract = " ".join(
        part.rstrip(".") + "." for part in (_flat(row), _flat(docstring)) if part
    )
    calling = _calling(name, callers)
    cited = " ".join([row, docstring, _comment_above(function), *calling])
    used = " ".join(annotations)
    return Hook(
        name=name,
        capability=capability,
        owner=owner.__name__,
        parameters=tuple(parameters),
        returns=returns,
        contract=contract,
        ids=tuple(sorted(set(_ID.findall(cited)))),
        names=tuple(sorted(set(_origins(used, function.__globals__)))),
    )


def _method(hook: Hook) -> Iterator[str]:
    if hook.parameters:
        yield f"    def {hook.name}("
        yield "        self,"
        yield from (f"        {parameter}," for parameter in hook.parameters)
        yield f"    ) -> {hook.returns}:"
    else:
        yield f"    def {hook.name}(self) -> {hook.returns}:"
    receives = ", ".join(p for p in hook.parameters if p != "*") or "nothing but self"
    paragraphs = [
        f"Hook of capability ``{hook.capability.value}`` ({hook.owner}).",
        f"Receives: {receives}.",
        f"Returns: {hook.returns}.",
        f"Contract: {hook.contract.rstrip('.') or 'see ' + hook.owner}.",
        "Bound by: " + (
            ", ".join(hook.ids) + "." if hook.ids else "no id is cited beside it in the "
            f"reference; the checks of capability {hook.capability.value} name theirs "
            "(convledger-conformance --list)."
        ),
    ]
    body = "\n\n".join(textwrap.fill(p, _WIDTH - 8) for p in paragraphs).replace('"""', "'''")
    yield '        """' + textwrap.indent(body, " " * 8).lstrip()
    yield '        """'
    yield "        raise NotImplementedError("
    yield f'            "{hook.name} (capability {hook.capability.value}) is not implemented yet"'
    yield "        )"


def _annotation(annotation: object) -> str:
    if annotation is inspect.Parameter.empty:
        return "object"
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def _origins(text: str, namespace: dict[str, object]) -> Iterator[tuple[str, str]]:
    for name in set(_IDENTIFIER.findall(text)):
        if name in {"None", "self"} or hasattr(builtins, name):
            continue
        if name not in namespace:
            raise SkeletonError(f"cannot tell where the annotation name {name!r} comes from")
        yield _origin(name, namespace[name]), name


def _origin(name: str, value: object) -> str:
    """The module that defines ``name`` (a class's own module, or the module assigning an alias)."""
    module = getattr(value, "__module__", None)
    if isinstance(value, type) and isinstance(module, str):
        return module
    for module_name, loaded in sorted(sys.modules.items()):
        if not module_name.startswith("convledger") or loaded.__dict__.get(name) is not value:
            continue
        try:
            source = inspect.getsource(loaded)
        except (OSError, TypeError):
            continue
        if re.search(rf"^{name}\b[^=\n]*=", source, re.MULTILINE):
            return module_name
    raise SkeletonError(f"cannot tell which module defines {name!r}")


def _hook_table(docstring: str) -> dict[str, str]:
    """The rows of a reST hook table: ````name```` in the first column, its contract after."""
    rows: dict[str, str] = {}
    current: str | None = None
    for line in docstring.splitlines():
        match = re.match(r"^``(_?\w+)``\s+(.*)$", line)
        if match:
            current = match[1]
            rows[current] = match[2]
        elif current is not None and line.startswith(" ") and line.strip():
            rows[current] += " " + line.strip()
        else:
            current = None
    return rows


def _public_sources(base: type) -> dict[str, str]:
    """The source of each method the base defines (its operations call its hooks)."""
    return {
        name: inspect.getsource(value)
        for name, value in base.__dict__.items()
        if inspect.isfunction(value) and not getattr(value, "__isabstractmethod__", False)
    }


def _calling(hook: str, sources: dict[str, str]) -> list[str]:
    """The sources of the methods that reach ``hook``, directly or through private helpers."""
    reached = {hook}
    found: dict[str, str] = {}
    while True:
        more = {
            name: source for name, source in sources.items()
            if name not in found and any(f"self.{target}(" in source for target in reached)
        }
        if not more:
            return list(found.values())
        found.update(more)
        reached |= {name for name in more if name.startswith("_")}


def _comment_above(function: Callable[..., object]) -> str:
    start = inspect.getsourcelines(function)[1]
    source = inspect.getsourcefile(function)
    if source is None:
        return ""
    above = Path(source).read_text("utf-8").splitlines()[: start - 1]
    comments: list[str] = []
    while above and above[-1].strip().startswith(("#", "@")):
        comments.append(above.pop())
    return " ".join(comments)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _import_order(module: str) -> tuple[int, str]:
    return (0 if module.split(".")[0] in sys.stdlib_module_names else 1, module)
