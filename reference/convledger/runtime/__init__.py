"""Runtime transitions and bounded operational reads (chapter ``transitions.md``).

Read in this order: :mod:`records` (what is stored), :mod:`transitions` (what a
caller asks), :mod:`view` (what the rules read and decide), :mod:`rules` (the
decisions), :mod:`state` (the in-memory state and the rebuild from the
ledger), :mod:`operations` (the store methods and their primitives).
"""

from convledger.runtime.operations import PurgeOutcome, RecoveryCursor, RecoveryPage
from convledger.runtime.records import (
    REASON_STATE,
    Admission,
    DraftSummary,
    Head,
    Message,
    MessageRole,
    MessageStatus,
    Run,
    RunState,
)
from convledger.runtime.state import RuntimeState, Snapshot, comparable, rebuild
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    Recover,
    Terminal,
    Transition,
)
from convledger.runtime.view import Admitted, Outcome, Status

__all__ = [
    "REASON_STATE",
    "Accept",
    "Acquire",
    "Admission",
    "Admitted",
    "Checkpoint",
    "Compact",
    "DraftSummary",
    "Fence",
    "Head",
    "Interrupt",
    "Message",
    "MessageRole",
    "MessageStatus",
    "Operation",
    "Outcome",
    "PurgeOutcome",
    "Recover",
    "RecoveryCursor",
    "RecoveryPage",
    "Run",
    "RunState",
    "RuntimeState",
    "Snapshot",
    "Status",
    "Terminal",
    "Transition",
    "comparable",
    "rebuild",
]
