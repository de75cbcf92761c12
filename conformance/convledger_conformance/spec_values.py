"""The limits, bounds and defaults of the spec, read from its own table (``spec/limits.json``).

The suite is an oracle of the stores it judges, the reference among them, so it
never takes an expected value from :mod:`convledger` (a mutant of
``reference/convledger/limits.py`` would otherwise change the store and the
oracle together, and survive; ``docs/mutation.md``). Every limit (chapter LIM),
every bound another chapter states (``bounds``) and every default of an
argument (``defaults``) comes from the package's copy of ``spec/limits.json``
(``limits.json`` beside this module, written by
``python -m convledger_conformance.requirements spec/ --write``; a test keeps
the copy, the file and the sentences of the spec equal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

import attrs


@attrs.frozen
class Limit:
    """One entry of ``limits``: name, value, unit, its id, whether a store may declare more."""

    name: str
    value: int
    unit: str
    requirement: str
    declare: bool


@attrs.frozen
class Bound:
    """One entry of ``bounds``: a range of one argument of one operation, none declarable."""

    name: str
    minimum: int | None
    maximum: int
    unit: str
    requirement: str
    operation: str


@attrs.frozen
class Default:
    """One entry of ``defaults``: the value an operation takes for an argument not given."""

    name: str
    value: int
    argument: str
    requirement: str
    operation: str


def _table() -> dict[str, Any]:
    text = resources.files("convledger_conformance").joinpath("limits.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


_TABLE: Final = _table()

LIMITS: Final[tuple[Limit, ...]] = tuple(Limit(**item) for item in _TABLE["limits"])
"""Every limit of chapter LIM, in the order of ``spec/limits.json``."""

BOUNDS: Final[tuple[Bound, ...]] = tuple(Bound(**item) for item in _TABLE["bounds"])
"""Every bound of ``spec/limits.json``, in its order."""

DEFAULTS: Final[tuple[Default, ...]] = tuple(Default(**item) for item in _TABLE["defaults"])
"""Every default of ``spec/limits.json``, in its order."""

LIMIT: Final[Mapping[str, Limit]] = {item.name: item for item in LIMITS}
BOUND: Final[Mapping[str, Bound]] = {item.name: item for item in BOUNDS}
DEFAULT: Final[Mapping[str, int]] = {item.name: item.value for item in DEFAULTS}

MAX_SAFE_INTEGER: Final = LIMIT["integerMagnitude"].value
"""LIM-007, CAN-006: the largest magnitude of an integer, 2**53 - 1."""

MAX_READ_LIMIT: Final = BOUND["readLimit"].maximum
"""LED-010: the largest ``limit`` of a read."""

MAX_APPEND_DRAFTS: Final = BOUND["appendDrafts"].maximum
"""LED-001: the largest batch of an append."""

READ_LIMIT: Final = DEFAULT["readLimit"]
"""LED-007: the ``limit`` of a read that gives none."""

CATCH_UP_MAX_EVENTS: Final = DEFAULT["catchUpMaxEvents"]
"""PRJ-011: the ``maxEvents`` of a catch-up that gives none."""

SPILL_BYTES: Final = BOUND["spillBytes"].maximum
"""SPL-003: the largest spill object."""
