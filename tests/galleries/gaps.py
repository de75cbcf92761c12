"""The gaps gallery: broken MemoryStores making the choice the spec refused (issue 33).

Each class has exactly ONE bug: the other answer to a question the spec left
open until issue 33 pinned it (or, for :class:`LaxArchiveDecoder` and
:class:`SkipsWithoutCounting`, a store the suite passed although it was
wrong). Each is listed with the check that kills it at the smoke profile.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import jsonschema

from convledger.archive_format import FORMAT
from convledger.capabilities import Capability
from convledger.errors import (
    InvalidInputError,
    LedgerError,
    NotSupportedError,
    UnauthorizedError,
)
from convledger.kinds import KindRegistry, default_registry
from convledger.memory import MemoryStore
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.store import ImportReport
from galleries import BrokenStore, broken


class FormatBeforeVersion(MemoryStore):
    """ARC-018: judges `format` before `formatVersion` (the table's step 2 comes first)."""

    def import_conversation(self, archive: bytes, **kwargs: Any) -> ImportReport:
        try:
            document = json.loads(archive)
        except (TypeError, ValueError):
            document = None
        if isinstance(document, dict) and document.get("format") != FORMAT:
            raise InvalidInputError("another format", requirement="ARC-002")
        return super().import_conversation(archive, **kwargs)


class JudgesUndeclaredCompanions(MemoryStore):
    """ERR-012: a ledger-only store that judges a runtime companion's shape before not_supported."""

    declared = frozenset({Capability.LEDGER})

    def _unjudged_companions(self) -> frozenset[str]:
        return frozenset()


class SkipsWithoutCounting(MemoryStore):
    """PRJ-053: once a conversation holds an ignorable event, catch-up ignores maxEvents."""

    def catch_up(self, conversation_id: str, definition: ProjectionDefinition, *,
                 max_events: int = 10_000) -> Checkpoint:
        try:
            skipping = any(e.ignorable for e in self.read(conversation_id).items)
        except LedgerError:
            skipping = False
        if skipping and type(max_events) is int and 1 <= max_events <= 1_000_000:
            max_events = 1_000_000
        return super().catch_up(conversation_id, definition, max_events=max_events)


class JudgesEveryStep(MemoryStore):
    """PRJ-054: judges the state after every folded event (it catches up one event at a time)."""

    def catch_up(self, conversation_id: str, definition: ProjectionDefinition, *,
                 max_events: int = 10_000) -> Checkpoint:
        if type(max_events) is not int or not 1 <= max_events <= 1_000_000:
            return super().catch_up(conversation_id, definition, max_events=max_events)
        point = super().catch_up(conversation_id, definition, max_events=1)
        for _ in range(max_events - 1):
            if point.upto_seq >= self.head(conversation_id):
                break
            point = super().catch_up(conversation_id, definition, max_events=1)
        return point


class LastDefinitionWins(MemoryStore):
    """PRJ-055: of handed definitions repeating a name, keeps the last one."""

    def import_conversation(self, archive: bytes, *,
                            projections: Sequence[ProjectionDefinition] = ()) -> ImportReport:
        if isinstance(projections, list):
            projections = list({d.name: d for d in projections
                                if isinstance(d, ProjectionDefinition)}.values())
        return super().import_conversation(archive, projections=projections)


class LaxMediaTypes(MemoryStore):
    """SPL-056: trims and lower-cases a media type before judging it."""

    def put_spill(self, conversation_id: str, data: bytes, **kwargs: Any) -> Any:
        media_type = kwargs.get("media_type")
        if isinstance(media_type, str):
            kwargs["media_type"] = media_type.strip().lower()
        return super().put_spill(conversation_id, data, **kwargs)


class DeniesWithoutCallback(MemoryStore):
    """SPL-057: answers `unauthorized` when no callable authorize is handed."""

    def get_spill(self, conversation_id: str, reference: str, *,
                  authorize: Callable[[Any], bool]) -> bytes:
        if not callable(authorize):
            raise UnauthorizedError("no callback, no bytes", requirement="SPL-020")
        return super().get_spill(conversation_id, reference, authorize=authorize)


class NotFoundBeforePurged(MemoryStore):
    """TRN-110: a delete_spill of a reference the purge removed answers not_found."""

    def delete_spill(self, conversation_id: str, reference: str, **kwargs: Any) -> Any:
        if isinstance(conversation_id, str) and isinstance(reference, str):
            self.get_spill(conversation_id, reference, authorize=lambda _: True)
        return super().delete_spill(conversation_id, reference, **kwargs)


def _dollar_for_end() -> KindRegistry:
    """The registry with each portable end ``(?![\\s\\S])`` "simplified" to ``$``, read
    by Python's ``re`` (where ``$`` also matches before a final newline)."""
    specs = default_registry().specs
    end = json.dumps(r"(?![\s\S])")[1:-1]
    return KindRegistry(  # type: ignore[call-arg]
        specs=specs,
        validators={key: jsonschema.Draft202012Validator(json.loads(
            json.dumps(spec.payload_schema).replace(end, "$")))
            for key, spec in specs.items()},
    )


class DollarForEnd(MemoryStore):
    """KND-006: writes the end of a pattern as `$` and reads it with Python's `re`, so a
    sha256 followed by "\\n" passes."""

    def __init__(self) -> None:
        super().__init__(registry=_dollar_for_end())


class CountsUtf16Units(MemoryStore):
    """LIM-013: counts a projection name's characters in UTF-16 code units."""

    def catch_up(self, conversation_id: str, definition: ProjectionDefinition, *,
                 max_events: int = 10_000) -> Checkpoint:
        name = getattr(definition, "name", "")
        if isinstance(name, str) and len(name.encode("utf-16-le")) // 2 > 200:
            raise InvalidInputError("a name of more than 200 UTF-16 units", requirement="PRJ-001")
        return super().catch_up(conversation_id, definition, max_events=max_events)


class LaxArchiveDecoder(MemoryStore):
    """ERR-011: reads formatVersion through a lax JSON decoder (repeated names, lone surrogates
    and integers past 2**53 pass it), so such an archive of another version is not_supported."""

    def import_conversation(self, archive: bytes, **kwargs: Any) -> ImportReport:
        try:
            document = json.loads(archive)
        except (TypeError, ValueError):
            document = None
        if isinstance(document, dict):
            version = document.get("formatVersion")
            if type(version) is int and version != 1:
                raise NotSupportedError("another formatVersion", requirement="ARC-002",
                                        capability="")
        return super().import_conversation(archive, **kwargs)


BROKEN: tuple[BrokenStore, ...] = (
    broken("gaps", FormatBeforeVersion, "ARC-018", checks=("archive_format_versions",)),
    broken("gaps", JudgesUndeclaredCompanions, "ERR-012",
           checks=("import_of_undeclared_companions",)),
    broken("gaps", SkipsWithoutCounting, "PRJ-053",
           checks=("skipped_events_count_toward_max_events",)),
    broken("gaps", JudgesEveryStep, "PRJ-054", checks=("catch_up_judges_the_stored_state",)),
    broken("gaps", LastDefinitionWins, "PRJ-055",
           checks=("handed_definitions_repeating_a_name",)),
    broken("gaps", LaxMediaTypes, "SPL-056", checks=("media_type_grammar",)),
    broken("gaps", DeniesWithoutCallback, "SPL-057", checks=("get_spill_without_a_callback",)),
    broken("gaps", NotFoundBeforePurged, "TRN-110",
           checks=("spill_writes_on_a_purged_conversation",)),
    broken("gaps", DollarForEnd, "KND-006", checks=("schema_patterns_are_ecma_262",)),
    broken("gaps", CountsUtf16Units, "LIM-013", checks=("characters_are_code_points",)),
    broken("gaps", LaxArchiveDecoder, "ERR-011", checks=("import_precedence",)),
)
