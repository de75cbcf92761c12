"""The README's own example store ('Validate your own store') and three bugs put into it.

The store is read from README.md as written, so the bugs are bugs of the store a
new user copies; each maker returns a fresh store. Issue 35 uses them to judge
what a failing run tells its user: the first "start here" line, the recorded
trace (fails on the bug, passes on the fix) and the rerun of the failed checks.

* :func:`make_seq_bug`: a batch of two or more drafts starts one seq too far
  (LED-002: a gap after the head).
* :func:`make_aliasing_bug`: a read cache hands out the same decoded envelope
  to every reader (LED-014: a caller's change to a payload reaches the next reader).
* :func:`make_kind_bug`: a known eventId is refused as ``conflict``, not as
  ``duplicate`` (LED-003), the requirement still named.

``make_fixed`` is the store as the README writes it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_code() -> str:
    text = README.read_text("utf-8")
    section = text.split("## Validate your own store\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "no python block under 'Validate your own store'"
    return match.group(1)


def _store_class(replacements: dict[str, str]) -> Any:
    code = _readme_code()
    for old, new in replacements.items():
        assert old in code, f"the README's store no longer holds {old!r}"
        code = code.replace(old, new)
    namespace: dict[str, Any] = {"__name__": __name__}
    exec(compile(code, str(README), "exec"), namespace)
    return namespace["MyStore"]


MyStore = _store_class({})
"""The README's store, unchanged: every bug below is fixed in it."""

SeqOffByOneOnBatches = _store_class({
    "for n, draft in enumerate(drafts, start=1)]":
        "for n, draft in enumerate(drafts, start=1 if len(drafts) == 1 else 2)]",
})
"""LED-002: a batch of two or more drafts is placed from head+2."""

DuplicateAsConflict = _store_class({
    'raise DuplicateError("eventId exists", requirement="LED-003",\n'
    "                                         identity=draft.event_id)":
        'raise ConflictError("eventId exists", requirement="LED-003", actual=head)',
})
"""LED-003: a known eventId is refused with the wrong kind, ``conflict``."""


NamesNoRequirement = _store_class({
    'raise DuplicateError("eventId exists", requirement="LED-003",\n'
    "                                         identity=draft.event_id)":
        'raise DuplicateError("eventId exists", requirement="LED-3", identity=draft.event_id)',
})
"""ERR-003: a known eventId is refused with the right kind but names no id of the spec (no trace
can show it: traces compare kinds alone)."""


class AliasingReadCache(MyStore):  # type: ignore[misc, valid-type]
    """LED-014: reads answer from a cache of decoded envelopes, the same objects every time."""

    def __init__(self) -> None:
        super().__init__()
        self._decoded: dict[tuple[str, int], Any] = {}

    def _read(self, conversation_id: str, from_seq: int, to_seq: int | None,
              limit: int) -> Any:
        with self._lock:
            ledger = self._events.get(conversation_id, [])
            stop = len(ledger) if to_seq is None else min(len(ledger), to_seq)
            return [
                self._decoded.setdefault((conversation_id, envelope.seq),
                                         copy.deepcopy(envelope))
                for envelope in ledger[from_seq - 1: min(stop, from_seq - 1 + limit)]
            ]


def make_fixed() -> Any:
    """The README's store as written."""
    return MyStore()


def make_seq_bug() -> Any:
    """The README's store, seq off by one on batches."""
    return SeqOffByOneOnBatches()


def make_aliasing_bug() -> Any:
    """The README's store with an aliasing read cache."""
    return AliasingReadCache()


def make_unnamed_bug() -> Any:
    """The README's store refusing a known eventId without naming LED-003."""
    return NamesNoRequirement()


def make_kind_bug() -> Any:
    """The README's store refusing a known eventId as conflict."""
    return DuplicateAsConflict()
