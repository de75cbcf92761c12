"""Payload schemas, fast: a validator compiled once per schema (KND-003).

Theory of operation
-------------------
The definition of KND-003 is :meth:`convledger.kinds.KindRegistry.check_payload`:
``jsonschema``'s draft 2020-12 validator, which interprets the schema anew on
every call (about 30 us for a ``provider/message`` payload, a quarter of an
in-memory append, profile in ``benchmarks/README.md``). ``fastjsonschema``
turns a schema into Python source once, so one call is a few ``isinstance``
tests and comparisons per member.

:func:`compile_accepts` returns a predicate that only ever ANSWERS YES
FAST: the append path (:func:`convledger.batch.validated_batch`) accepts a
payload the predicate accepts, and hands every other payload to the
definition, which accepts it or raises its own error. So a refusal, its
``requirement`` and its message always come from ``jsonschema``, and the two
can differ only if the compiled validator accepted a payload ``jsonschema``
refuses; ``tests/test_fast_validate.py`` checks on a property corpus of valid
and invalid payloads of every registered kind that it never does.

Where the compiled validator is stricter, nothing is lost but time: for
example it anchors ``$`` of a ``pattern`` at the very end of the string, so
``"^[0-9a-f]{64}$"`` refuses a digest followed by a newline, which Python's
``re.search`` (and so ``jsonschema``) accepts; such a payload takes the slow
path and is accepted there.

``fastjsonschema`` implements drafts 4, 6 and 7, not 2020-12. Only a schema
made of the keywords in :data:`SAME_IN_DRAFT_7` (their meaning is the same in
draft 7 and draft 2020-12, and none of them fills in defaults or checks
formats) is compiled; for any other schema :func:`compile_accepts` returns
None and the definition alone judges its payloads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import fastjsonschema

SAME_IN_DRAFT_7: Final = frozenset(
    {
        "$schema",
        "title",
        "description",
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
"""The keywords a compiled schema may use: same meaning in draft 7 and 2020-12."""

_SUBSCHEMA_MAPS = frozenset({"properties"})
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf"})
_SUBSCHEMA = frozenset({"additionalProperties", "items", "not", "if", "then", "else"})
_DRAFT_7 = "http://json-schema.org/draft-07/schema#"


def compilable(schema: object) -> bool:
    """True when every keyword of ``schema`` and its subschemas is in :data:`SAME_IN_DRAFT_7`."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for keyword, value in schema.items():
        if keyword not in SAME_IN_DRAFT_7:
            return False
        if keyword in _SUBSCHEMA_MAPS:
            if not isinstance(value, Mapping) or not all(map(compilable, value.values())):
                return False
        elif keyword in _SUBSCHEMA_LISTS:
            if not isinstance(value, list) or not all(map(compilable, value)):
                return False
        elif keyword in _SUBSCHEMA and not compilable(value):
            return False  # an array-form "items" too (draft 7 only; 2020-12 has prefixItems)
    return True


def _as_draft_7(schema: Mapping[str, object]) -> dict[str, Any]:
    """The schema with its ``$schema`` (2020-12) replaced by draft 7's, at the root only."""
    copy = dict(schema)
    if "$schema" in copy:
        copy["$schema"] = _DRAFT_7
    return copy


def compile_accepts(schema: Mapping[str, object]) -> Callable[[object], bool] | None:
    """A predicate that accepts only payloads ``jsonschema`` accepts, or None (see above)."""
    if not compilable(schema):
        return None
    validate = fastjsonschema.compile(
        _as_draft_7(schema), use_default=False, use_formats=False
    )
    refused = fastjsonschema.JsonSchemaException

    def accepts(payload: object) -> bool:
        try:
            validate(payload)
        except refused:
            return False
        return True

    return accepts
