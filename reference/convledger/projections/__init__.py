"""Projections with honest checkpoints (chapter ``projections.md``).

Read in this order: :mod:`definition` (what a projection is), :mod:`fold`
(catch-up, written once for every store), :mod:`builtins` (summary and state
slots), :mod:`operations` (the store methods and their primitives),
:mod:`companion` (checkpoints in archives).

The names below are imported when first used (PEP 562): the built-ins check their
state schemas when :mod:`builtins` is imported, which imports ``jsonschema``, and a
process that opens a store without reading a projection need not (issue 34).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convledger.lazy_names import lazy_names

if TYPE_CHECKING:
    from convledger.projections.builtins import BUILT_INS, STATE_SLOTS, SUMMARY
    from convledger.projections.definition import (
        Checkpoint,
        ProjectionDefinition,
        ProjectionStatus,
    )

_HOMES = {
    "BUILT_INS": "builtins", "STATE_SLOTS": "builtins", "SUMMARY": "builtins",
    "Checkpoint": "definition", "ProjectionDefinition": "definition",
    "ProjectionStatus": "definition",
}
"""The module of ``convledger.projections`` each public name comes from."""


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())


__all__ = [
    "BUILT_INS",
    "STATE_SLOTS",
    "SUMMARY",
    "Checkpoint",
    "ProjectionDefinition",
    "ProjectionStatus",
]
