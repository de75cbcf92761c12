"""Which checks a run runs: ``-k EXPR`` over check names and ``--chapter LED[,TRN]``.

``-k`` takes a pytest-like expression: a *word* (letters, digits, ``_``, ``-``,
``.``, ``/``) is true for a check whose name contains it, case-insensitively;
words combine with ``and``, ``or``, ``not`` and parentheses, ``not`` binding
tightest and ``or`` loosest::

    -k append                   every check whose name contains "append"
    -k "machine and not purge"  the state machines, but not the purge ones

``--chapter`` keeps the checks that cover at least one id of the named
chapters (the id prefix: ``LED``, ``TRN``, ...). Both together keep the checks
both select. A selection that selects nothing is a usage error, so a typo
never turns into a run that passes because it checked nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from convledger_conformance.registry import Check

Predicate = Callable[[str], bool]

_TOKEN: Final = re.compile(r"\s*(\(|\)|[\w./-]+)")
_OPERATORS: Final = frozenset({"and", "or", "not"})


class SelectionError(ValueError):
    """A ``-k`` expression or a ``--chapter`` list that cannot be used."""


def keyword_predicate(expression: str) -> Predicate:
    """The predicate over check names that the ``-k`` ``expression`` stands for."""
    tokens = _tokens(expression)
    if not tokens:
        raise SelectionError("-k needs an expression")
    predicate, rest = _or(tokens)
    if rest:
        raise SelectionError(f"-k {expression!r}: unexpected {rest[0]!r}")
    return predicate


def chapters_of(text: str, known: Iterable[str]) -> frozenset[str]:
    """The chapter prefixes of a ``--chapter LED,TRN`` list; unknown ones are refused."""
    chosen = frozenset(part.strip().upper() for part in text.split(",") if part.strip())
    if not chosen:
        raise SelectionError("--chapter needs at least one chapter prefix, as in LED,TRN")
    unknown = sorted(chosen - frozenset(known))
    if unknown:
        raise SelectionError(
            f"--chapter: unknown chapter {', '.join(unknown)} "
            f"(chapters: {', '.join(sorted(known))})"
        )
    return chosen


def select(
    checks: Iterable[Check], *, keyword: str | None = None, chapters: frozenset[str] | None = None
) -> list[Check]:
    """The checks that ``keyword`` (a ``-k`` expression) and ``chapters`` both keep."""
    matches = keyword_predicate(keyword) if keyword is not None else None
    chosen = [
        item
        for item in checks
        if (matches is None or matches(item.name))
        and (chapters is None or any(prefix(i) in chapters for i in item.ids))
    ]
    if not chosen:
        raise SelectionError("the selection (-k, --chapter) selects no check")
    return chosen


def keyword_for(name: str, names: Sequence[str]) -> str:
    """A ``-k`` expression that selects the check ``name`` alone among ``names``."""
    others = sorted(other for other in names if other != name and name.lower() in other.lower())
    return " and not ".join([name, *others])


def prefix(requirement_id: str) -> str:
    """The chapter prefix of a requirement id (``LED`` for ``LED-002``)."""
    return requirement_id.partition("-")[0]


# -- the expression grammar: or := and ("or" and)*; and := not ("and" not)*; --------------
# -- not := "not" not | "(" or ")" | word -------------------------------------------------


def _tokens(expression: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(expression):
        if expression[position:].strip() == "":
            break
        found = _TOKEN.match(expression, position)
        if found is None:
            raise SelectionError(f"-k {expression!r}: cannot read {expression[position:]!r}")
        tokens.append(found.group(1))
        position = found.end()
    return tokens


def _or(tokens: list[str]) -> tuple[Predicate, list[str]]:
    left, rest = _and(tokens)
    while rest[:1] == ["or"]:
        right, rest = _and(rest[1:])
        left = _either(left, right)
    return left, rest


def _and(tokens: list[str]) -> tuple[Predicate, list[str]]:
    left, rest = _not(tokens)
    while rest[:1] == ["and"]:
        right, rest = _not(rest[1:])
        left = _both(left, right)
    return left, rest


def _not(tokens: list[str]) -> tuple[Predicate, list[str]]:
    if not tokens:
        raise SelectionError("-k: the expression ends where a word was expected")
    head, rest = tokens[0], tokens[1:]
    if head == "not":
        inner, rest = _not(rest)
        return (lambda name: not inner(name)), rest
    if head == "(":
        inner, rest = _or(rest)
        if rest[:1] != [")"]:
            raise SelectionError("-k: a '(' is not closed")
        return inner, rest[1:]
    if head == ")" or head in _OPERATORS:
        raise SelectionError(f"-k: {head!r} where a word was expected")
    word = head.lower()
    return (lambda name: word in name.lower()), rest


def _either(left: Predicate, right: Predicate) -> Predicate:
    return lambda name: left(name) or right(name)


def _both(left: Predicate, right: Predicate) -> Predicate:
    return lambda name: left(name) and right(name)
