"""JSON Schema ``pattern`` as ECMA-262 reads it (KND-005).

JSON Schema 2020-12 (§6.4) says a ``pattern`` is an ECMA-262 regular
expression. Python's ``re`` reads the same text differently in two ways
that matter for the spec's schemas: ``$`` also matches before a final
newline (so ``^[0-9a-f]{64}$`` accepts a digest followed by ``"\\n"``), and
``\\d`` matches every Unicode decimal digit. :func:`ecma_regex` rewrites a
pattern so that ``re`` reads it as ECMA-262 does (``$`` becomes ``(?!.|\\n)``,
the very end of the string; ``\\d`` and ``\\D`` become ``[0-9]`` and
``[^0-9]``), and :data:`EcmaValidator` is the draft 2020-12 validator with
that ``pattern`` keyword, used for every payload and state schema.

The rewriting knows escapes and character classes; the spec's schemas use no
other construct where the two languages differ.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
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
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


EcmaValidator: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, validators={"pattern": _pattern}
)
"""Draft 2020-12 with ECMA-262 patterns (KND-005)."""
