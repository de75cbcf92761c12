"""JSON Schema ``pattern``: the portable subset of the spec's schemas (KND-006), and
ECMA-262's reading of any other pattern (KND-005).

JSON Schema 2020-12 (§6.4) says a ``pattern`` is an ECMA-262 regular
expression. Python's ``re`` reads the same text differently: ``$`` also
matches before a final newline (so ``^[0-9a-f]{64}$`` accepts a digest
followed by ``"\\n"``), ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are Unicode
(``\\d`` matches ``"\\u0661"``), ``.`` excludes only ``"\\n"``, and an astral
character is one character where ECMA-262 without ``u`` sees two UTF-16 units.

The spec's own schemas (``schemas/kinds.json``, ``envelope.schema.json``,
``archive.schema.json``) keep to a subset in which the two languages agree
(KND-006): :func:`check_portable` refuses any other pattern, so the registry
(:mod:`convledger.kinds`) evaluates them with ``re`` unchanged, as the TypeScript
kit evaluates them with Ajv unchanged. ``tests/test_patterns_portable.py`` runs
both engines on a generated corpus.

A projection's state schema (PRJ-002) is the client's, not the spec's: its
patterns may leave the subset, and :func:`ecma_validator` rewrites the two
differences that matter most (``$`` becomes ``(?![\\s\\S])``, the very end of
the string; ``\\d`` and ``\\D`` become ``[0-9]`` and ``[^0-9]``) before ``re``
reads them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import ValidationError


@functools.lru_cache(maxsize=256)
def ecma_regex(pattern: str) -> re.Pattern[str]:
    """The compiled Python regex that matches exactly what ECMA-262 ``pattern`` matches."""
    return re.compile(ecma_source(pattern))


def ecma_source(pattern: str) -> str:
    """The Python regex text that matches exactly what ECMA-262 ``pattern`` matches."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped == "d":
                out.append("0-9" if in_class else "[0-9]")
            elif escaped == "D" and not in_class:
                out.append("[^0-9]")
            else:
                out.append(char + escaped)
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("]", index + 1) or pattern.startswith("^]", index + 1):
                out.append(pattern[index:index + 2])  # a literal ] first in the class
                index += 2
                continue
        elif char == "$":
            out.append(r"(?![\s\S])")
            index += 1
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _pattern(
    validator: Any, pattern: str, instance: object, schema: Any
) -> Iterator[ValidationError]:
    """KND-005: the ``pattern`` keyword with ECMA-262's reading of ``pattern``."""
    if isinstance(instance, str) and not ecma_regex(pattern).search(instance):
        from jsonschema import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def ecma_validator() -> Any:
    """The validator class of Draft 2020-12 with ECMA-262 patterns (KND-005), made on first
    use: importing ``jsonschema`` is left to the processes that validate a state schema."""
    import jsonschema

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator, validators={"pattern": _pattern}
    )


# KND-006: the portable subset of the spec's own patterns.

SYNTAX = frozenset("^$\\.*+?()[]{}|/")
"""The characters a pattern may escape with ``\\`` (ECMA-262's SyntaxCharacter and ``/``)."""
END = r"(?![\s\S])"
"""The end of the string, the same in ECMA-262 and Python's ``re`` (``$`` is not, KND-006)."""
_CLASS_PAIRS = ("--", "&&", "||", "~~")  # set operations to Python (a FutureWarning), v-mode JS


class NotPortableError(ValueError):
    """A pattern outside the portable subset of KND-006."""


def check_portable(pattern: str) -> None:
    """Raise :class:`NotPortableError` unless ``pattern`` keeps to KND-006's subset.

    The subset, in which ECMA-262 (with or without the ``u`` flag) and Python's ``re``
    match the same strings: printable ASCII literals; ``\\`` before a syntax character
    or ``/`` (and ``-`` in a class); classes of those and ranges; ``(...)``, ``(?:...)``
    and ``|``; the quantifiers ``? * + {n} {n,} {n,m}``, each optionally lazy; ``^``;
    and :data:`END`, the only end anchor.
    """
    _Reader(pattern).alternatives(top=True)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, why: str) -> NotPortableError:
        return NotPortableError(f"pattern {self.text!r} at {self.at}: {why} (KND-006)")

    def peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.text[index] if index < len(self.text) else ""

    def alternatives(self, *, top: bool) -> None:
        while True:
            self.sequence()
            if self.peek() == "|":
                self.at += 1
                continue
            if self.peek() == ")" and not top:
                return
            if self.at < len(self.text):
                raise self.fail(f"unexpected {self.peek()!r}")
            if not top:
                raise self.fail("a group is not closed")
            return

    def sequence(self) -> None:
        while self.peek() not in ("", "|", ")"):
            if self.text.startswith(END, self.at):
                self.at += len(END)
                quantifiable = False
            elif self.peek() == "^":
                self.at += 1
                quantifiable = False
            else:
                self.atom()
                quantifiable = True
            if self.peek() in ("?", "*", "+", "{"):
                if not quantifiable:
                    raise self.fail("a quantifier after an assertion")
                self.quantifier()

    def atom(self) -> None:
        char = self.peek()
        if char == "(":
            if self.text.startswith("(?:", self.at):
                self.at += 3
            elif self.peek(1) == "?":
                raise self.fail("lookarounds, named groups and inline flags other than "
                                f"the end {END} are not portable")
            else:
                self.at += 1
            self.alternatives(top=False)
            self.at += 1  # the ")"
        elif char == "[":
            self.character_class()
        elif char == "\\":
            self.escape(in_class=False)
        elif char == "$":
            raise self.fail(f"$ also matches before a final newline in Python: write {END}")
        elif char == ".":
            raise self.fail(". differs on line terminators and astral characters")
        elif char in SYNTAX and char != "/":
            raise self.fail(f"{char!r} must be escaped")
        else:
            self.literal()

    def literal(self) -> None:
        if not " " <= self.peek() <= "~":
            raise self.fail(f"{self.peek()!r} is not printable ASCII (astral characters are "
                            "two units to ECMA-262 without u)")
        self.at += 1

    def escape(self, *, in_class: bool) -> str:
        escaped = self.peek(1)
        if escaped in SYNTAX or (in_class and escaped == "-"):
            self.at += 2
            return escaped
        raise self.fail(f"\\{escaped} is not portable (\\d \\w \\s \\b are Unicode in Python, "
                        "ASCII in ECMA-262; letters and digits escape other things)")

    def quantifier(self) -> None:
        if self.peek() == "{":
            close = self.text.find("}", self.at)
            bounds = self.text[self.at + 1:close].split(",") if close > 0 else []
            if not 1 <= len(bounds) <= 2 or not bounds[0].isascii() or not bounds[0].isdigit() \
                    or (len(bounds) == 2 and bounds[1] and not (
                        bounds[1].isascii() and bounds[1].isdigit()
                        and int(bounds[0]) <= int(bounds[1]))):
                raise self.fail("{ that is not a quantifier {n}, {n,} or {n,m}")
            self.at = close + 1
        else:
            self.at += 1
        if self.peek() == "?":
            self.at += 1
        if self.peek() in ("?", "*", "+", "{"):
            raise self.fail("a quantifier after a quantifier (possessive in Python)")

    def character_class(self) -> None:
        start = self.at
        self.at += 1
        if self.peek() == "^":
            self.at += 1
        first = True
        while self.peek() != "]" or first:
            low = self.class_char(first)
            first = False
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.at += 1
                high = self.class_char(False)
                if ord(low) > ord(high):
                    raise self.fail(f"the range {low}-{high} is reversed")
                if self.peek() == "-" and self.peek(1) != "]":
                    raise self.fail("- after a range (an error to ECMA-262 with u)")
        self.at += 1
        body = self.text[start:self.at]
        if any(pair in body for pair in _CLASS_PAIRS):
            raise self.fail(f"{body} has a doubled -, &, | or ~ (set operations in Python)")

    def class_char(self, first: bool) -> str:
        char = self.peek()
        if char == "":
            raise self.fail("a class is not closed")
        if char == "\\":
            return self.escape(in_class=True)
        if char in ("[", "]") or (char == "^" and first):
            raise self.fail(f"{char!r} in a class must be escaped")
        self.literal()
        return char


def schema_patterns(schema: object) -> Iterator[str]:
    """Every regular expression in ``schema`` and its subschemas: each ``pattern`` keyword's
    value and each ``patternProperties`` name (never a property called ``pattern``)."""
    if isinstance(schema, dict):
        for keyword, value in schema.items():
            if keyword == "pattern" and isinstance(value, str):
                yield value
            elif keyword in ("properties", "patternProperties", "$defs") \
                    and isinstance(value, dict):
                if keyword == "patternProperties":
                    yield from value
                for item in value.values():
                    yield from schema_patterns(item)
            elif keyword not in ("enum", "const", "default", "examples"):
                yield from schema_patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from schema_patterns(item)
