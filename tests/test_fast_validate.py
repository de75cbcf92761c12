"""The compiled payload validators never accept a payload the definition refuses (KND-003).

``convledger.kinds.KindRegistry.check_payload`` (``jsonschema``, draft 2020-12)
is the definition; ``convledger.fast.validate.compile_accepts`` (``fastjsonschema``)
compiles each registered schema once, and the append path
(``KindRegistry.check_appended_payload``) accepts what it accepts and hands every
other payload to the definition. So the two agree exactly when the compiled
predicate accepts nothing the definition refuses; these properties check that, and
that the append path's outcome (accepted, or the error's class, requirement and
message) is the definition's, on a corpus of valid and invalid payloads of every
registered kind: the example payload of each kind with up to three mutations
(a member replaced by a value that trips schemas, removed, or added).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from convledger import codec
from convledger.canonical import JsonValue
from convledger.errors import InvalidInputError
from convledger.fast import rust_validate
from convledger.fast import validate as fast
from convledger.kinds import KindRegistry, KindSpec, default_registry
from convledger_bench.workloads import payload as workload_payload
from convledger_conformance.ledger.strategies import json_values
from convledger_conformance.ledger.strategies_kinds import EXAMPLE_PAYLOADS

EXAMPLES = max(300, settings().max_examples)
properties = settings(max_examples=EXAMPLES, deadline=None)

REGISTRY = default_registry()
PAIRS = sorted(REGISTRY.specs)
TRICKY: list[JsonValue] = [
    None, True, False, 0, 1, -1, 2, 1.0, 1.5, -0.0, 2**53 - 1, "", "x", "a" * 64, "0" * 64,
    "0" * 64 + "\n", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z\n", "٠", [], {}, [1, 1],
    ["a", "a"], ["git"], {"role": "user"}, "user", "every", "done", "lost", "degraded",
]
"""Values that trip schemas: bools beside integers, 1.0, empty strings, digests, newlines."""


def _outcome(check: Any, kind: str, version: int, payload: object) -> tuple[str, ...] | None:
    try:
        check(kind, version, payload)
    except InvalidInputError as error:
        return (type(error).__name__, error.requirement, str(error))
    return None


def _definition_accepts(kind: str, version: int, payload: object) -> bool:
    return _outcome(REGISTRY.check_payload, kind, version, payload) is None


@st.composite
def _mutated(draw: st.DrawFn, value: JsonValue) -> JsonValue:
    """``value`` with one member or item replaced, removed or added, at a drawn path."""
    root = copy.deepcopy(value)
    parent: Any = None
    key: Any = None
    node: Any = root
    while isinstance(node, (dict, list)) and node and draw(st.booleans()):
        parent, key = node, draw(st.sampled_from(sorted(node) if isinstance(node, dict)
                                                 else range(len(node))))
        node = node[key]
    operation = draw(st.sampled_from(("replace", "remove", "add")))
    replacement = draw(st.sampled_from(TRICKY) | json_values(max_leaves=4))
    if operation == "add" and isinstance(node, dict):
        node[draw(st.sampled_from(("extra", "role", "id", "state")))] = replacement
    elif operation == "add" and isinstance(node, list):
        node.append(replacement)
    elif operation == "remove" and parent is not None:
        del parent[key]
    elif parent is None:
        return replacement
    else:
        parent[key] = replacement
    return root


@st.composite
def corpus(draw: st.DrawFn) -> tuple[str, int, JsonValue]:
    """(kind, version, payload): an example payload of a registered pair, mutated 0..3 times."""
    kind, version = draw(st.sampled_from(PAIRS))
    payload: JsonValue = EXAMPLE_PAYLOADS[(kind, version)]
    if (kind, version) == ("provider/message", 1) and draw(st.booleans()):
        payload = workload_payload(draw(st.integers(0, 10**6)))
    for _ in range(draw(st.integers(0, 3))):
        payload = draw(_mutated(payload))
    # the append path validates the payload as decoded from its canonical text
    return kind, version, codec.decode_stored(codec.encode(payload).decode("utf-8"))


def test_every_registered_schema_compiles_and_accepts_its_example() -> None:
    """Every pair of kinds.json has a compiled validator (no keyword outside draft 7's)."""
    assert set(EXAMPLE_PAYLOADS) == set(PAIRS)
    for key in PAIRS:
        accepts = fast.compile_accepts(REGISTRY.specs[key].payload_schema)
        assert accepts is not None, key
        assert accepts(EXAMPLE_PAYLOADS[key]) and _definition_accepts(*key, EXAMPLE_PAYLOADS[key])


COMPILERS = [
    pytest.param(fast.compile_fastjsonschema, id="fastjsonschema"),
    pytest.param(rust_validate.compile_accepts, id="jsonschema-rs", marks=pytest.mark.skipif(
        not rust_validate.AVAILABLE, reason="jsonschema-rs (extra convledger[fast]) not installed"
    )),
]
"""Both compiled validators: each must accept only what the definition accepts."""


@pytest.mark.parametrize("compiler", COMPILERS)
@properties
@given(case=corpus())
def test_compiled_validator_accepts_only_what_the_definition_accepts(
    compiler: Any, case: tuple[str, int, JsonValue],
) -> None:
    kind, version, payload = case
    accepts = compiler(REGISTRY.specs[(kind, version)].payload_schema)
    assert accepts is not None
    if accepts(payload):
        assert _definition_accepts(kind, version, payload)


def test_the_rust_validator_is_chosen_when_installed() -> None:
    """With ``jsonschema-rs`` installed the seam's compiled validator is its ``is_valid``."""
    accepts = fast.compile_accepts(REGISTRY.specs[("provider/message", 1)].payload_schema)
    assert accepts is not None
    assert (getattr(accepts, "__self__", None).__class__.__module__ == "jsonschema_rs") is (
        rust_validate.AVAILABLE
    )


@properties
@given(corpus())
def test_the_append_path_answers_as_the_definition(case: tuple[str, int, JsonValue]) -> None:
    """Same accept or refuse, same error class, requirement and message (KND-003)."""
    kind, version, payload = case
    assert _outcome(REGISTRY.check_appended_payload, kind, version, payload) == _outcome(
        REGISTRY.check_payload, kind, version, payload
    )


def test_the_corpus_holds_valid_and_invalid_payloads_of_every_kind() -> None:
    """The mutations reach both answers for every pair, so the properties compare both."""
    seen: dict[tuple[str, int], set[bool]] = {key: set() for key in PAIRS}

    @settings(max_examples=2000, deadline=None, database=None, phases=SEARCH_ONLY)
    @given(corpus())
    def collect(case: tuple[str, int, JsonValue]) -> None:
        kind, version, payload = case
        seen[(kind, version)].add(_definition_accepts(kind, version, payload))
        _stop_once_every_answer_is_seen(seen)

    with contextlib.suppress(_EveryAnswerSeen):
        collect()
    assert all(answers == {True, False} for answers in seen.values()), seen


class _EveryAnswerSeen(Exception):
    """Raised inside a collecting search once it has what it looks for: the search stops."""


SEARCH_ONLY = (Phase.explicit, Phase.generate)
"""No shrinking: a search stopped by :class:`_EveryAnswerSeen` ends at once, unshrunk."""


def _stop_once_every_answer_is_seen(seen: dict[Any, set[bool]]) -> None:
    """End the search as soon as every key has both answers (the budget is only the bound)."""
    if all(answers == {True, False} for answers in seen.values()):
        raise _EveryAnswerSeen


@pytest.mark.parametrize(
    ("schema", "payload", "accepted"),
    [
        ({"type": "integer"}, 1.0, True),  # 2020-12: an integral float is an integer
        ({"type": "integer"}, True, False),
        ({"enum": [1]}, True, False),
        ({"const": False}, 0, False),
        ({"uniqueItems": True}, [1, True], True),
        ({"minLength": 2}, "\U0001f600", False),
        # KND-006: the portable end (?![\s\S]) and [0-9], in both validators
        ({"pattern": "^a(?![\\s\\S])"}, "a\n", False),
        ({"pattern": "^[0-9](?![\\s\\S])"}, "\u0661", False),
        ({"pattern": "^[0-9](?![\\s\\S])"}, "7", True),
        # (. and \w, read differently by Python's re and ECMA-262, are refused in any schema
        # by KND-006: tests/test_patterns_portable.py)
        ({"uniqueItems": True}, [1, 1.0], False),  # equal numbers, whatever their type
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], False),
        ({"uniqueItems": True}, [0, False], True),
        ({"const": 1}, 1.0, True),
        ({"enum": [1, False]}, 0, False),
        ({"maxLength": 1}, "\U0001f600", True),  # code points, not UTF-16 units or bytes
        ({"type": "integer"}, 2**53 - 1, True),
        ({"type": "number"}, True, False),
        ({"type": "object", "required": ["a"]}, {"b": None}, False),
        ({"type": "string", "maxLength": 3}, "abcd", False),
    ],
)
def test_known_differences_of_the_two_validators_never_show(
    schema: dict[str, JsonValue], payload: JsonValue, accepted: bool
) -> None:
    spec = KindSpec("test/kind", 1, "kinds", "a test kind", schema)
    registry = KindRegistry.of([spec])
    assert _definition_accepts_in(registry, payload) is accepted
    for compiler in (fast.compile_fastjsonschema, rust_validate.compile_accepts):
        accepts = compiler(schema)
        if accepts is not None and accepts(payload):
            assert accepted, compiler
    assert _outcome(registry.check_appended_payload, "test/kind", 1, payload) == _outcome(
        registry.check_payload, "test/kind", 1, payload
    )


def _definition_accepts_in(registry: KindRegistry, payload: JsonValue) -> bool:
    return _outcome(registry.check_payload, "test/kind", 1, payload) is None


def test_a_schema_with_other_keywords_is_not_compiled() -> None:
    """Keywords outside draft 7's common set ($defs, $ref, format) leave the definition alone."""
    assert fast.compile_accepts({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}) is None
    assert fast.compile_accepts({"type": "string", "format": "date-time"}) is None
    assert fast.compile_accepts({"items": [{"type": "string"}]}) is None
    assert fast.compile_accepts({"type": "object", "properties": {"a": {"minLength": 1}}})


# -- a schema of one if/then per value of one member: judged by that value's branch ----------

TRANSITION = REGISTRY.specs[("runtime/transition", 1)].payload_schema
BRANCHES = fast.discriminated(TRANSITION)


def _instance(schema: Any) -> JsonValue:
    """A small value of ``schema``'s shape: its const, first enum value, required members."""
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if "enum" in schema:
        return copy.deepcopy(schema["enum"][0])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _instance(properties.get(name, {})) for name in schema.get("required", [])}
    if kind == "string":
        return "0" * 64 if "pattern" in schema else "x" * max(1, schema.get("minLength", 1))
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "array":
        return [_instance(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind == "boolean":
        return True
    return {}


def _inputs() -> dict[str, JsonValue]:
    """One valid ``input`` per transition type, built from its branch's ``then``."""
    assert BRANCHES is not None
    return {
        value: _instance(then["properties"]["input"])  # type: ignore[index]
        for value, then in BRANCHES[1].items()
    }


INPUTS = _inputs()


def test_the_transition_schema_is_one_branch_per_type() -> None:
    """``runtime/transition`` takes the one-branch path: one ``then`` per type of its enum,
    and each type's built input is a payload the definition accepts (the corpus below is
    made of them)."""
    assert BRANCHES is not None
    member, branches = BRANCHES
    assert member == "type"
    assert sorted(branches) == sorted(TRANSITION["properties"]["type"]["enum"])  # type: ignore[index]
    for value, given_input in INPUTS.items():
        assert _definition_accepts("runtime/transition", 1, {"type": value, "input": given_input})


@pytest.mark.parametrize(
    "all_of",
    [
        [],
        [{"if": {"properties": {"t": {"const": "a"}}}, "then": {}, "else": {}}],
        [{"if": {"properties": {"t": {"const": 1}}}, "then": {}}],
        [{"if": {"properties": {"t": {"const": "a"}}}, "then": {}},
         {"if": {"properties": {"t": {"const": "a"}}}, "then": {}}],
        [{"if": {"properties": {"t": {"const": "a"}}}, "then": {}},
         {"if": {"properties": {"u": {"const": "b"}}}, "then": {}}],
        [{"if": {"properties": {"t": {"const": "a"}, "u": {"const": "b"}}}, "then": {}}],
        [{"if": {"properties": {"t": {"enum": ["a"]}}}, "then": {}}],
        [{"if": {"required": ["t"], "properties": {"t": {"const": "a"}}}, "then": {}}],
        [{"type": "object"}],
    ],
)
def test_other_all_of_shapes_take_the_whole_schema(all_of: list[Any]) -> None:
    """Only the exact shape is split: an ``else``, a non-string or repeated value, two
    members, another test or another keyword in the ``if`` leave the schema whole."""
    assert fast.discriminated({"type": "object", "allOf": all_of}) is None


@st.composite
def transition_payloads(draw: st.DrawFn) -> JsonValue:
    """A transition payload whose type and input may come from different types, mutated."""
    values = sorted(INPUTS)
    payload: JsonValue = {
        "type": draw(st.sampled_from(values) | st.sampled_from(TRICKY)),
        "input": copy.deepcopy(INPUTS[draw(st.sampled_from(values))]),
    }
    for _ in range(draw(st.integers(0, 2))):
        payload = draw(_mutated(payload))
    return codec.decode_stored(codec.encode(payload).decode("utf-8"))


@functools.cache
def _compiled_transition() -> tuple[Callable[[object], bool], Callable[[object], bool]]:
    """``compile_accepts`` and ``compile_whole`` of the transition schema, compiled once.

    Each compilation costs about 0.07 s of CPU (fastjsonschema generates and execs code);
    per example that was most of this file's time, for the same two predicates every time.
    """
    accepts = fast.compile_fastjsonschema(TRANSITION)
    assert accepts is not None
    return accepts, fast.compile_whole(TRANSITION)


@properties
@given(transition_payloads())
def test_one_branch_answers_as_the_whole_schema(payload: JsonValue) -> None:
    """The predicate that judges by the type's branch accepts exactly what the compiled whole
    schema accepts, and only what the definition accepts."""
    accepts, whole = _compiled_transition()
    assert accepts(payload) is whole(payload)
    if accepts(payload):
        assert _definition_accepts("runtime/transition", 1, payload)


def test_the_one_branch_corpus_reaches_both_answers_of_every_type() -> None:
    """Each type is both accepted and refused by the corpus above."""
    seen: dict[object, set[bool]] = {value: set() for value in INPUTS}

    @settings(max_examples=3000, deadline=None, database=None, phases=SEARCH_ONLY)
    @given(transition_payloads())
    def collect(payload: JsonValue) -> None:
        if isinstance(payload, dict) and isinstance(payload.get("type"), str) \
                and payload["type"] in seen:
            seen[payload["type"]].add(_definition_accepts("runtime/transition", 1, payload))
            _stop_once_every_answer_is_seen(seen)

    with contextlib.suppress(_EveryAnswerSeen):
        collect()
    assert all(answers == {True, False} for answers in seen.values()), seen


@pytest.mark.skipif(not rust_validate.AVAILABLE, reason="jsonschema-rs not installed")
@properties
@given(transition_payloads())
def test_the_rust_validator_accepts_only_transitions_the_definition_accepts(
    payload: JsonValue,
) -> None:
    accepts = rust_validate.compile_accepts(TRANSITION)
    assert accepts is not None
    if accepts(payload):
        assert _definition_accepts("runtime/transition", 1, payload)
