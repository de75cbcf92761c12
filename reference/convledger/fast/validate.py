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

Where the compiled validator is stricter, nothing is lost but time. Both read
a ``pattern`` with Python's ``re`` unchanged: the registry admits only patterns
of the portable subset of KND-006 (:mod:`convledger.patterns`), which ``re``
reads as ECMA-262 does.

One shape is compiled more than once: a schema whose ``allOf`` is one ``if`` /
``then`` pair per value of one member (``{"if": {"properties": {"type": {"const":
"accept"}}}, "then": ...}``, as ``runtime/transition`` is written). The compiled
whole tries every ``if`` on every payload, and each ``if`` that fails raises and
catches an exception inside ``fastjsonschema`` (about 12 us for a transition's
payload, 2 us with one branch). So :func:`compile_accepts` also compiles, per
value, the schema with that value's ``then`` as its only ``allOf`` member, and
judges an object whose member holds one of the values (an exact ``str``) by it.
That is the same judgment: for such an object each ``if`` holds exactly when
its constant equals the member (two JSON strings are equal when their code
points are, as Python's ``==`` says), so every other ``then`` is idle and the
``allOf`` is that one ``then``. Any other payload (no such member, another
value, not an object) goes to the compiled whole.

A Rust-backed validator, when installed
-------------------------------------
With the extra ``convledger[fast]`` (``jsonschema-rs``), :func:`compile_accepts` returns
:func:`convledger.fast.rust_validate.compile_accepts` instead: a draft 2020-12 validator
compiled once in Rust, whose ``is_valid`` answers a ``provider/message`` payload in
about 0.2 us where the ``fastjsonschema`` predicate takes 1.4 us (and a transition's
without the split below). It is held to the same rule (it only ever answers yes; the
definition judges the rest) and the same proof (``tests/test_fast_validate.py`` runs every
property on both predicates). The same keywords are compiled (:func:`compilable`).

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

from convledger.fast import rust_validate

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
    """A predicate that accepts only payloads ``jsonschema`` accepts, or None (see above):
    ``jsonschema-rs``'s when it is installed (:mod:`convledger.fast.rust_validate`), else
    ``fastjsonschema``'s."""
    if not compilable(schema):
        return None
    rust = rust_validate.compile_accepts(schema)
    if rust is not None:
        return rust
    return compile_fastjsonschema(schema)


def compile_fastjsonschema(schema: Mapping[str, object]) -> Callable[[object], bool] | None:
    """:func:`compile_accepts` by ``fastjsonschema`` alone, split by :func:`discriminated`."""
    if not compilable(schema):
        return None
    whole = _compiled(schema)
    found = discriminated(schema)
    if found is None:
        return lambda payload: _passes(whole, payload)

    member, branches = found
    rest = {keyword: value for keyword, value in schema.items() if keyword != "allOf"}
    by_value = {value: _compiled({**rest, "allOf": [then]}) for value, then in branches.items()}

    def accepts_one_branch(payload: object) -> bool:
        if type(payload) is dict:
            value = payload.get(member)
            if type(value) is str:
                return _passes(by_value.get(value, whole), payload)
        return _passes(whole, payload)

    return accepts_one_branch


def compile_whole(schema: Mapping[str, object]) -> Callable[[object], bool]:
    """The compiled schema as one predicate, never split by :func:`discriminated` (the tests'
    oracle of the split one)."""
    whole = _compiled(schema)
    return lambda payload: _passes(whole, payload)


def _passes(validate: Callable[[object], object], payload: object) -> bool:
    try:
        validate(payload)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _compiled(schema: Mapping[str, object]) -> Callable[[object], object]:
    validate: Callable[[object], object] = fastjsonschema.compile(
        _as_draft_7(schema), use_default=False, use_formats=False
    )
    return validate


def discriminated(schema: Mapping[str, object]) -> tuple[str, dict[str, object]] | None:
    """(member, {value: its ``then``}) when ``allOf`` is one ``if``/``then`` per value of one
    member, each ``if`` exactly ``{"properties": {member: {"const": value}}}`` with ``value``
    a string and no value twice; else None (see above)."""
    branches = schema.get("allOf")
    if not isinstance(branches, list) or not branches:
        return None
    member: str | None = None
    thens: dict[str, object] = {}
    for branch in branches:
        if not isinstance(branch, Mapping) or set(branch) != {"if", "then"}:
            return None
        condition = branch["if"]
        if not isinstance(condition, Mapping) or set(condition) != {"properties"}:
            return None
        tested = condition["properties"]
        if not isinstance(tested, Mapping) or len(tested) != 1:
            return None
        ((name, test),) = tested.items()
        if not isinstance(test, Mapping) or set(test) != {"const"}:
            return None
        value = test["const"]
        if type(value) is not str or value in thens or (member is not None and name != member):
            return None
        member = name
        thens[value] = branch["then"]
    assert member is not None
    return member, thens
