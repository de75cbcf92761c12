"""Payload schemas compiled by ``jsonschema-rs`` (optional, extra ``convledger[fast]``; KND-003).

``jsonschema-rs`` is a draft 2020-12 validator written in Rust: a schema is
compiled once, and ``is_valid`` walks the payload's Python objects without
building a Python object per member. Like the ``fastjsonschema`` predicate of
:mod:`convledger.fast.validate`, it only ever ANSWERS YES FAST: the append path
accepts a payload it accepts and hands every other payload to the definition,
:meth:`convledger.kinds.KindRegistry.check_payload` (``jsonschema``), which accepts
it or raises its own error. So a refusal is always the definition's.

Why its answers may be trusted for the keywords :func:`convledger.fast.validate.
compilable` admits (the only schemas compiled): it implements draft 2020-12
itself, so no keyword is read as another draft reads it; it does not check
``format`` (``validate_formats=False``), as the definition does not; it reads
a ``pattern`` as ECMA-262 does (KND-005: ``\\d`` is ``[0-9]``, ``$`` is the
very end, ``.`` no line terminator), and it tells ``true`` from ``1`` and
takes ``1.0`` for an integer and equal to ``1`` (``type``, ``const``, ``enum``,
``uniqueItems``) as ``jsonschema`` does. ``tests/test_fast_validate.py`` checks
each of these on the values that tell them apart, and, on the property corpus of
every registered kind, that it never accepts a payload the definition refuses.
It never fetches a ``$ref`` (none is compiled: ``compilable`` admits no ``$ref``).

Without the package installed, :func:`compile_accepts` returns None and the
``fastjsonschema`` predicate is used; :data:`AVAILABLE` says which.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any, Final

AVAILABLE: Final = importlib.util.find_spec("jsonschema_rs") is not None
"""True when ``jsonschema-rs`` is installed (``pip install 'convledger[fast]'``); else
fastjsonschema's predicate is used. The package is imported on the first compile, so a
process that never validates a payload does not load it (issue 34)."""


def compile_accepts(schema: Mapping[str, object]) -> Callable[[object], bool] | None:
    """``jsonschema-rs``'s ``is_valid`` for ``schema``, or None when the package is missing.

    The caller (:func:`convledger.fast.validate.compile_accepts`) compiles only schemas of
    the keywords :func:`~convledger.fast.validate.compilable` admits.
    """
    if not AVAILABLE:
        return None
    # by name, so mypy reads this module alike with and without the extra installed
    jsonschema_rs: Any = importlib.import_module("jsonschema_rs")
    validator: Any = jsonschema_rs.Draft202012Validator(
        dict(schema), validate_formats=False
    )
    accepts: Callable[[object], bool] = validator.is_valid
    return accepts
