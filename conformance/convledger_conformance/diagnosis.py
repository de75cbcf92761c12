"""Root cause first: the failures of a run, in the order to fix them (issue 35).

One bug usually fails several checks: a seq one off on batches fails the seq
check, the archive check, the canonical-JSON checks and the state machine. The
report therefore orders failed checks by what they depend on and names the
first one in a short "start here" line; the rest are listed after it, each
marked as a likely consequence when it shares the first's diverging operation.

The order (:func:`rank`), as a table:

=====  =================================================================
key    why
=====  =================================================================
1      the capability: ``ledger`` before every other (all build on it),
       then the others in the order of :data:`CAPABILITY_ORDER`
2      the chapter of the check's first failed id, in
       :data:`CHAPTER_ORDER`: the ledger core (LED) before the envelope,
       kinds and errors, archives and replay, and those before canonical
       details (CAN), limits and the wire; CAP (the declaration and the
       capability smoke tests) judges combinations, so it comes late
3      the size of the failure's smallest trace, when ``--record-failures``
       recorded one (steps, then bytes): the simplest reproduction first
4      how many ids failed (a focused check before a state machine)
5      the id's number, then the check's name
=====  =================================================================

Failures whose traces diverge at the same operation with the same members
differing (:attr:`CheckResult.signature`) form one group; without traces
every failure is its own group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import attrs

from convledger.store import Capability
from convledger_conformance.results import FAILED, CheckResult

CHAPTER_ORDER: Final = (
    "LED", "ENV", "KND", "ERR", "ARC", "RPL", "CAN", "CAP", "LIM", "WIR", "SQL", "DUR", "FLT",
    "TRN", "PRJ", "SPL", "SRC", "FCT", "PRV", "PGS",
)
"""Chapters from the most basic to the most derived (see the module's table)."""
CAPABILITY_ORDER: Final = (Capability.LEDGER, *(c for c in Capability if c != Capability.LEDGER))
"""``ledger`` first, then the others as the capability table lists them."""
_UNWRITTEN: Final = re.compile(r"(_?\w+) \(capability (\w+)\) is not implemented yet")
"""The NotImplementedError of a hook of a ``new-store`` skeleton (skeleton.py)."""


@attrs.frozen
class MissingHook:
    """A hook a skeleton store has not implemented yet, and how many checks reached it."""

    name: str
    capability: str
    checks: int


def missing_hooks(checks: Sequence[CheckResult]) -> list[MissingHook]:
    """The skeleton hooks failed checks reached, in the order to write them.

    That order is the capability's (ledger first), then the hook's place in its base,
    which is the order of the skeleton module (``new-store``) and of the hook tables.
    """
    reached: dict[tuple[str, str], int] = {}
    for result in checks:
        if result.status != FAILED:
            continue
        found = {(match.group(1), match.group(2)) for match in _UNWRITTEN.finditer(
            f"{result.message}\n{result.detail}")}
        for key in found:
            reached[key] = reached.get(key, 0) + 1
    if not reached:
        return []
    from convledger_conformance.skeleton import hooks_of

    order: dict[tuple[str, str], int] = {}
    for capability in CAPABILITY_ORDER:
        for hook in hooks_of(capability):
            order.setdefault((hook.name, capability.value), len(order))
    # A hook no Python base has (the TypeScript kit's ``write``, ``view``, ...) sorts by its
    # capability's place, ledger first, then by name.
    keys = sorted(reached, key=lambda key: (
        order.get(key, len(order)), _capability_rank(key[1]), key))
    return [MissingHook(name, capability, reached[name, capability])
            for name, capability in keys]


def _capability_rank(name: str) -> int:
    """The place of capability NAME in :data:`CAPABILITY_ORDER` (unknown names last)."""
    try:
        return CAPABILITY_ORDER.index(Capability(name))
    except ValueError:
        return len(CAPABILITY_ORDER)


def hook_lines(checks: Sequence[CheckResult]) -> list[str]:
    """One screen for a skeleton's run: the hooks still to write, in order ([] if none)."""
    hooks = missing_hooks(checks)
    if not hooks:
        return []
    failed = sum(result.status == FAILED for result in checks)
    return [
        f"{len(hooks)} hook(s) not implemented yet; write them in this order "
        f"({failed} checks failed):",
        *(f"  {number}. {hook.name} (capability {hook.capability}): reached by "
          f"{hook.checks} failed check(s)" for number, hook in enumerate(hooks, start=1)),
    ]


@attrs.frozen
class Group:
    """Failed checks sharing one first diverging operation (or one check alone)."""

    signature: str
    results: tuple[CheckResult, ...]

    @property
    def first(self) -> CheckResult:
        """The group's check to read first."""
        return self.results[0]


def rank(result: CheckResult) -> tuple[object, ...]:
    """The sort key of a failed check: the module's table, in order."""
    ids = result.failed_ids or result.ids
    chapters = [_chapter_rank(requirement) for requirement in ids] or [len(CHAPTER_ORDER)]
    chapter = min(chapters)
    numbers = [_number(r) for r in ids if _chapter_rank(r) == chapter] or [0]
    capability = max(CAPABILITY_ORDER.index(c) for c in result.needs())
    size = result.trace_size if result.trace_size is not None else (10**9, 10**12)
    return (capability, chapter, size, len(ids), min(numbers), result.name)


def root_first(checks: Sequence[CheckResult]) -> list[Group]:
    """The failed checks of a run, grouped by first divergence, groups in fixing order."""
    failed = sorted((result for result in checks if result.status == FAILED), key=rank)
    groups: dict[str, list[CheckResult]] = {}
    for result in failed:
        key = result.signature or f"check:{result.name}"
        groups.setdefault(key, []).append(result)
    return [Group(signature, tuple(results)) for signature, results in groups.items()]


def start_here(checks: Sequence[CheckResult]) -> str:
    """The one "start here" line of a failing run ("" when nothing failed)."""
    groups = root_first(checks)
    if not groups:
        return ""
    hooks = missing_hooks(checks)
    if hooks:
        return (f"Start here: implement {hooks[0].name} (capability {hooks[0].capability}), "
                f"the first of {len(hooks)} hook(s) not implemented yet: "
                f"{', '.join(hook.name for hook in hooks)}")
    first = groups[0].first
    failed = sum(len(group.results) for group in groups)
    where = (f"first diverging operation {first.divergence}" if first.divergence
             else first.message)
    rest = ""
    if failed > 1:
        same = len(groups[0].results) - 1
        rest = (f"; then {failed - 1} more failed check(s)"
                + (f", {same} with the same first divergence" if same else "")
                + ": fix this first and rerun with --lf")
    return (f"Start here: {first.name} [{', '.join(first.failed_ids)}]: "
            f"{_shortened(where)}{rest}")


def _chapter_rank(requirement: str) -> int:
    chapter = requirement.partition("-")[0]
    return CHAPTER_ORDER.index(chapter) if chapter in CHAPTER_ORDER else len(CHAPTER_ORDER)


def _number(requirement: str) -> int:
    digits = requirement.partition("-")[2]
    return int(digits) if digits.isdigit() else 0


def _shortened(text: str, limit: int = 400) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else f"{line[:limit]}..."
