"""What the SQLite machine migrates: version 1 files, the oracle of their baselines, the model.

:func:`v1_databases` draws version 1 files whose rows are the records of
chapter TRN that small generated transition scripts leave, or a head only
(SQL-003, SQL-037, SQL-054); :func:`expected_baseline_payload` computes the
baseline each migrated conversation must get from the rows alone, without the
store (SQL-033, SQL-034); :class:`MigratedLedgerModel` is the ledger model
plus the ``runtime`` companion a baseline sets (SQL-031, TRN-103, TRN-104).
The rule that uses them is ``migrate_v1_mid_run`` of
:class:`~convledger_conformance.sqlite.machine.SqliteLedgerMachine`; the
migration checks of :mod:`convledger_conformance.sqlite.checks_migration` use
the oracle too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Final, cast

import attrs
from hypothesis import strategies as st

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.runtime.companion import companions_for
from convledger.runtime.records import Head
from convledger.runtime.state import RuntimeState, rebuild
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Fence,
    Interrupt,
    Recover,
    Terminal,
    Transition,
)
from convledger.sqlite.fixtures import Row, V1Rows, runtime_states, v1_rows_of
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.model import LedgerModel, Refusal

# -- version 1 files and the oracle of their baselines ---------------------------------------

_SUFFIXES: Final = ("", "\x00", "ü", "/😀")
"""Suffixes of the ids inside a script: NUL, non-ASCII and astral characters (ENV-005)."""
_ENDINGS: Final = (
    "queued", "coalesced", "interrupted", "running", "checkpointed", "interrupt_requested",
    "succeeded", "failed", "abandoned",
)
"""How one admitted run of a script ends; the first four leave it active."""
_STAYS_ACTIVE: Final = frozenset({"queued", "coalesced", "running", "checkpointed",
                                  "interrupt_requested"})

Step = tuple[str, Transition, str]


@st.composite
def transition_scripts(draw: st.DrawFn, conversation: str) -> list[Step]:
    """SQL-037: a script of transitions of chapter TRN that all apply, for one conversation.

    Runs are admitted one after the other; each ends one of :data:`_ENDINGS`
    ways, and a run left active ends the script (a later accept would coalesce
    or wait in causal order). Fences follow the rules: acquire moves revision
    and token to 1, each fenced write moves the revision on (TRN-040).
    """
    suffix = draw(st.sampled_from(_SUFFIXES))
    script: list[Step] = []

    def step(transition: Transition) -> None:
        script.append((conversation, transition, draw(gen.occurred_at())))

    def text() -> dict[str, JsonValue]:
        return {"text": draw(st.text(max_size=4))}

    for number in range(1, draw(st.integers(1, 3)) + 1):
        run, owner = f"r-{number}{suffix}", f"w-{number}{suffix}"
        step(Accept(f"k-{number}{suffix}", f"in-{number}{suffix}", run, f"a-{number}{suffix}",
                    text()))
        ending = draw(st.sampled_from(_ENDINGS))
        if ending == "coalesced":  # TRN-023: a second input joins the queued run
            step(Accept(f"k-{number}b{suffix}", f"in-{number}b{suffix}", f"r-{number}b{suffix}",
                        f"a-{number}b{suffix}", text()))
        elif ending == "interrupted":
            step(Interrupt(run))
        elif ending != "queued":
            step(Acquire(run, owner))
            revision = 1
            if ending in ("checkpointed", "succeeded") and draw(st.booleans()):
                step(Checkpoint(run, Fence(owner, revision, 1),
                                {"id": f"d-{number}", "status": "streaming", "parts": ["x"]}))
                revision += 1
            if ending == "interrupt_requested":
                step(Interrupt(run))
            elif ending == "abandoned":
                step(Recover(run, revision, "abandon", {}))
            elif ending in ("succeeded", "failed"):
                reason = "success" if ending == "succeeded" else draw(st.sampled_from(
                    ("provider_failure", "runtime_failure", "timeout", "cancelled")))
                step(Terminal(run, Fence(owner, revision, 1), reason, text()))
        if ending in _STAYS_ACTIVE:
            break
    return script


@attrs.frozen
class V1Script:
    """What a version 1 file holds, as transitions: applied, they give its rows (SQL-037).

    ``steps`` are ``(conversationId, transition, occurredAt)``; ``head_only``
    are conversations with a head and nothing else, with their ``updated_at``.
    The conversation ids are moved behind a prefix before the transitions
    apply, so the records name the conversation their rows belong to.
    """

    steps: tuple[Step, ...]
    head_only: tuple[tuple[str, str], ...]

    def rows(self, prefix: str) -> V1Rows:
        """The version 1 rows of the script, every conversation id behind ``prefix``."""
        script = [(f"{prefix}{c}", transition, at) for c, transition, at in self.steps]
        head_only = []
        for name, updated_at in self.head_only:
            state = RuntimeState(f"{prefix}{name}")
            state.head_record = Head(f"{prefix}{name}", 0)
            head_only.append((state, updated_at))
        return v1_rows_of([*runtime_states(script), *head_only])


@st.composite
def v1_databases(draw: st.DrawFn) -> V1Script:
    """Version 1 files of valid TRN records (SQL-003, SQL-037, SQL-054): 1..3 conversations.

    Each conversation is a transition script that the reference rules apply
    (``fixtures.runtime_states``) or, one time in four, a head only.
    """
    names = draw(st.lists(gen.identifiers(), min_size=1, max_size=3, unique=True))
    steps: list[Step] = []
    head_only: list[tuple[str, str]] = []
    for name in names:
        if draw(st.integers(0, 3)) == 0:
            head_only.append((name, draw(gen.occurred_at())))
        else:
            steps.extend(draw(transition_scripts(name)))
    return V1Script(tuple(steps), tuple(head_only))


def expected_baseline_payload(
    rows: V1Rows, conversation: str, migrated_at: str
) -> dict[str, JsonValue]:
    """SQL-033, SQL-034: the baseline payload, computed from the rows without the store.

    Messages by position, runs by ordinal then run id, admissions by ordinal
    then idempotency key (text by code point, SQLite's order of UTF-8);
    ``asOf`` is the newest message or run time as an instant, greater text on a tie.
    """

    def mine(table: Iterable[Row], *keys: int) -> list[Row]:
        found = [row for row in table if row[0] == conversation]
        return sorted(found, key=lambda row: tuple[Any, ...](row[k] for k in keys))

    def decoded(row: Row) -> JsonValue:
        return cast(JsonValue, canonical.decode(str(row[-1]).encode("utf-8")))

    messages, runs = mine(rows.messages, 1), mine(rows.runs, 2, 1)
    payload: dict[str, JsonValue] = {
        "migratedAt": migrated_at,
        "head": decoded(mine(rows.heads)[0]),
        "messages": [decoded(row) for row in messages],
        "runs": [decoded(row) for row in runs],
        "admissions": [decoded(row) for row in mine(rows.admissions, 3, 1)],
    }
    times = [str(row[4]) for row in (*messages, *runs)]
    if times:
        payload["asOf"] = max(times, key=lambda text: (instant(text), text))
    return payload


_RFC3339: Final = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?(?:[Zz]|([+-])(\d\d):(\d\d))", re.ASCII
)


def instant(text: str) -> tuple[int, Decimal]:
    """The instant an RFC 3339 date-time names: (UTC seconds from 0000-03-01, fraction).

    Days are counted in the proleptic Gregorian calendar, year 0000 included
    (ENV-008 admits it), so two spellings of one instant compare equal.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 date-time: {text!r}")
    year, month, day, hour, minute, second = (int(match[index]) for index in range(1, 7))
    era, year_of_era = divmod(year - (month <= 2), 400)
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    offset = 0
    if match[8] is not None:
        offset = (int(match[9]) * 3600 + int(match[10]) * 60) * (1 if match[8] == "+" else -1)
    fraction = Decimal("0" + match[7]) if match[7] else Decimal(0)
    return days * 86400 + hour * 3600 + minute * 60 + second - offset, fraction


# -- the model of migrated conversations -------------------------------------------------------


class MigratedLedgerModel(LedgerModel):
    """The ledger model, plus the ``runtime`` companion of each migrated conversation.

    A migrated conversation's export carries the state its baseline sets
    (TRN-103); the ledger machine only appends events of other kinds after it,
    so that companion stays ``companions_for(rebuild(cid, [baseline]))``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.companions: dict[str, bytes] = {}
        """The canonical ``companions`` member of each migrated conversation's export."""

    def migrated(self, conversation_id: str, baseline: Envelope) -> None:
        """SQL-031, TRN-103: remember the companion the baseline of a conversation sets."""
        self.companions[conversation_id] = canonical.encode(
            companions_for(rebuild(conversation_id, [baseline]))
        )

    def expect_export(self, conversation_id: object) -> bytes | Refusal:
        """ARC-001, TRN-103: the model's archive, with the runtime companion when migrated."""
        expected = super().expect_export(conversation_id)
        if isinstance(expected, Refusal) or conversation_id not in self.companions:
            return expected
        assert isinstance(conversation_id, str)
        empty = b'{"companions":{},'
        assert expected.startswith(empty)
        return b"".join((b'{"companions":', self.companions[conversation_id], b",",
                         expected[len(empty):]))

    def expect_import(self, data: object) -> tuple[str, tuple[bytes, ...]] | Refusal:
        """ARC-009 .. ARC-013, TRN-104: a migrated conversation's own companion is no fault.

        An archive whose ``companions`` are exactly those of the migrated
        conversation it names is judged as the same archive without them.
        """
        if isinstance(data, bytes):
            try:
                document = canonical.decode(data)
            except Exception:
                document = None
            if isinstance(document, dict) and document.get("conversationId") in self.companions:
                known = self.companions[str(document["conversationId"])]
                if canonical.encode(document.get("companions")) == known:
                    data = canonical.encode({**document, "companions": {}})
        return super().expect_import(data)
