"""Projections with honest checkpoints (chapter ``projections.md``).

Read in this order: :mod:`definition` (what a projection is), :mod:`fold`
(catch-up, written once for every store), :mod:`builtins` (summary and state
slots), :mod:`operations` (the store methods and their primitives),
:mod:`companion` (checkpoints in archives).
"""

from convledger.projections.builtins import BUILT_INS, STATE_SLOTS, SUMMARY
from convledger.projections.definition import (
    Checkpoint,
    ProjectionDefinition,
    ProjectionStatus,
)

__all__ = [
    "BUILT_INS",
    "STATE_SLOTS",
    "SUMMARY",
    "Checkpoint",
    "ProjectionDefinition",
    "ProjectionStatus",
]
