"""The kind registry (chapter ``kinds.md``, ids KND-*).

A registry maps each known ``(kind, schemaVersion)`` pair to the JSON Schema
(draft 2020-12) of its payload. The registry this package ships is the data
file ``schemas/kinds.json``, the same bytes as ``spec/schemas/kinds.json``, so
an implementation in any language can load exactly what the reference
enforces (KND-001).

Producers may append only registered pairs with a payload their schema
accepts (KND-002, KND-003). Stores keep unregistered pairs only when the
envelope is ignorable and arrived by import (KND-004, RPL-002).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import TYPE_CHECKING

import attrs

from convledger import codec
from convledger.canonical import JsonValue
from convledger.errors import InvalidInputError
from convledger.patterns import check_portable, schema_patterns

if TYPE_CHECKING:
    import jsonschema  # imported where a registry is built: a process may never need it

KindKey = tuple[str, int]


@attrs.frozen
class KindSpec:
    """One registered ``(kind, schemaVersion)`` pair and its payload schema."""

    kind: str
    schema_version: int
    chapter: str
    summary: str
    payload_schema: Mapping[str, JsonValue] = attrs.field(eq=False, repr=False)


@attrs.frozen
class KindRegistry:
    """The set of kinds a reader understands, with a compiled validator per kind."""

    specs: Mapping[KindKey, KindSpec]
    _validators: Mapping[KindKey, jsonschema.protocols.Validator] = attrs.field(
        eq=False, repr=False
    )
    _compiled: dict[KindKey, Callable[[object], bool] | None] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )
    """Per pair, :func:`convledger.codec.compile_schema` of its schema, compiled on first use."""

    @classmethod
    def of(cls, specs: Iterable[KindSpec]) -> KindRegistry:
        """Build a registry; a pair registered twice, or a schema with a pattern outside
        the portable subset of KND-006 (:class:`convledger.patterns.NotPortableError`), is
        a programming error."""
        import jsonschema

        table: dict[KindKey, KindSpec] = {}
        for spec in specs:
            key = (spec.kind, spec.schema_version)
            if key in table:
                raise ValueError(f"{key!r} registered twice")
            jsonschema.Draft202012Validator.check_schema(spec.payload_schema)
            for pattern in schema_patterns(spec.payload_schema):
                check_portable(pattern)  # KND-006: re reads it as ECMA-262 does
            table[key] = spec
        validators = {
            key: jsonschema.Draft202012Validator(spec.payload_schema)
            for key, spec in table.items()
        }
        return cls(specs=table, validators=validators)

    def knows(self, kind: str, schema_version: int) -> bool:
        """True when the pair is registered (RPL-001)."""
        return (kind, schema_version) in self.specs

    def check_payload(self, kind: str, schema_version: int, payload: JsonValue) -> None:
        """Refuse an unregistered pair (KND-002) or a payload its schema rejects (KND-003)."""
        validator = self._validators.get((kind, schema_version))
        if validator is None:
            raise InvalidInputError(
                f"kind {kind!r} version {schema_version} is not registered",
                requirement="KND-002",
                field="kind",
            )
        if validator.is_valid(payload):
            return  # the common case; best_match below walks every error to explain one
        import jsonschema.exceptions

        error = jsonschema.exceptions.best_match(validator.iter_errors(payload))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "(root)"
            raise InvalidInputError(
                f"payload of {kind!r} v{schema_version} at {where}: {error.message}",
                requirement="KND-003",
                field="payload",
            )


    def check_appended_payload(self, kind: str, schema_version: int, payload: JsonValue) -> None:
        """:meth:`check_payload` on the append and import paths, through the codec seam
        (KND-002, KND-003).

        A payload the pair's compiled validator (:data:`convledger.codec.compile_schema`)
        accepts is accepted; every other payload, and every payload of a pair without
        one, is judged by :meth:`check_payload`, the definition, which accepts it or
        raises its own error. So the refusals are always the definition's
        (``tests/test_fast_validate.py`` proves the compiled validators never accept
        more). The conformance suite calls :meth:`check_payload` only.
        """
        accepts = self.compiled_accepts(kind, schema_version)
        if accepts is None or not accepts(payload):
            self.check_payload(kind, schema_version, payload)

    def compiled_accepts(self, kind: str, schema_version: int) -> Callable[[object], bool] | None:
        """The pair's compiled validator (:data:`convledger.codec.compile_schema`), compiled on
        first use, or None (the clear code, an unregistered pair, a schema not compiled): a
        predicate that answers True only for payloads :meth:`check_payload` accepts."""
        key = (kind, schema_version)
        try:
            return self._compiled[key]
        except KeyError:
            spec = self.specs.get(key)
            accepts = None if spec is None else codec.compile_schema(spec.payload_schema)
            self._compiled[key] = accepts
            return accepts


def load_registry_document() -> Mapping[str, JsonValue]:
    """The shipped ``kinds.json`` document, parsed."""
    text = resources.files("convledger").joinpath("schemas/kinds.json").read_text("utf-8")
    document: Mapping[str, JsonValue] = json.loads(text)
    return document


def default_registry() -> KindRegistry:
    """The registry of every kind this version of the spec defines (KND-001)."""
    global _DEFAULT
    if _DEFAULT is None:
        document = load_registry_document()
        entries = document["kinds"]
        assert isinstance(entries, list)
        _DEFAULT = KindRegistry.of(
            KindSpec(
                kind=entry["kind"],
                schema_version=entry["schemaVersion"],
                chapter=entry["chapter"],
                summary=entry["summary"],
                payload_schema=entry["payloadSchema"],
            )
            for entry in entries
            if isinstance(entry, dict)
        )
    return _DEFAULT


_DEFAULT: KindRegistry | None = None
