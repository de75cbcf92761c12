"""The ledger state machine on the SQLite store on a file, with the rules only a file has.

Theory of operation
-------------------
:class:`SqliteLedgerMachine` is the ledger machine of ``ledger/machine.py`` with three
more kinds of step, each followed by the machine's invariant (every ledger
equals the model: seqs 1..n, eventIds unique in the store, canonical bytes):

* ``reopen``: close the file mid-sequence and open it again (LED-015);
* ``append_from_another_process``: this process appends to one of the
  program's conversations; a real second Python process opens the same file
  with the same store class and appends a batch to that conversation while
  this process appends to it again; then this process appends once more
  (SQL-047). The child reports the envelopes it got back as JSON on stdout;
  the machine orders the two concurrent batches by their seqs and checks each
  batch against the model before committing it;
* ``migrate_v1_mid_run``: export every ledger, write a version 1 file of
  generated conversations (ids disjoint from the program's; their rows are
  the records of chapter TRN that small generated transition scripts leave,
  or a head only, since a migration refuses anything else, SQL-037), open it
  with the store class (it migrates, with an injected clock and eventId
  generator), check each baseline against an oracle computed here from the
  generated rows (SQL-031 .. SQL-035), import the exports, switch the machine
  to the migrated file and append to each migrated conversation, which must
  land at seq 2. From then on the model expects the export of a migrated
  conversation to carry the ``runtime`` companion its baseline sets (TRN-103).

A subprocess costs about a tenth of a second, so a program runs at most
:data:`MAX_PROCESSES` of them and at most :data:`MAX_MIGRATIONS` migrations.
A store on ``:memory:`` has none of these rules; it runs the plain ledger
machine (``tests/test_sqlite_machine.py``).
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, cast

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    MultipleResults,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
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
from convledger.sqlite import SqliteStore
from convledger.sqlite.fixtures import (
    Row,
    V1Rows,
    runtime_states,
    v1_rows_of,
    v1_table_rows,
    write_v1_database,
)
from convledger.store import Capability
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.machine import (
    MACHINE_IDS,
    UNEXPECTED_REFUSAL,
    LedgerMachineBase,
    Raised,
    fail,
)
from convledger_conformance.ledger.model import MAX_LIMIT, LedgerModel, Refusal, envelope_bytes
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import CheckContext, CheckFailure, StoreFactory, check
from convledger_conformance.support import fresh_store

MAX_PROCESSES: Final = 2
"""Subprocess rules per program (each costs a Python start)."""
MAX_MIGRATIONS: Final = 2
"""Migration rules per program."""
NEEDED: Final = {
    Capability.PERSISTENCE: ("LED-015",),
    Capability.MIGRATION: ("SQL-031", "SQL-032", "SQL-033", "SQL-034", "SQL-035"),
    Capability.MULTI_PROCESS: ("SQL-047",),
}
"""The capability each extra rule needs, and the ids it verifies."""
FILE_IDS: Final = tuple(i for ids in NEEDED.values() for i in ids)
"""The ids the extra rules add to the machine's."""
SQLITE_MACHINE_IDS: Final = (*MACHINE_IDS, *FILE_IDS)
"""Every id a failure of :class:`SqliteLedgerMachine` can name."""
OWN_PREFIX: Final = "sqlite-machine/"
"""Prefix of the ids made up here; a generated identifier is never this long."""

_CHILD = textwrap.dedent(
    """
    import importlib, json, sys
    from convledger.envelope import EventDraft
    plan = json.loads(sys.stdin.readline())
    module, _, name = plan["store"].partition(":")
    opener = importlib.import_module(module)
    for part in name.split("."):
        opener = getattr(opener, part)
    store = opener(plan["path"], busy_timeout=60)
    print("ready", flush=True)
    sys.stdin.readline()
    placed = store.append(plan["conversation"], [EventDraft(**d) for d in plan["drafts"]])
    store.close()
    wires = []
    for e in placed:
        wire = {"schemaVersion": e.schema_version, "eventId": e.event_id,
                "conversationId": e.conversation_id, "seq": e.seq, "kind": e.kind,
                "occurredAt": e.occurred_at, "payload": e.payload}
        if e.ignorable is not False:
            wire["ignorable"] = e.ignorable
        wires.append(wire)
    print(json.dumps(wires))
    """
)
"""The second process: open the file, say ready, append on ``go``, print what came back."""


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


# -- the machine ---------------------------------------------------------------------------


class SqliteLedgerMachine(LedgerMachineBase):
    """The ledger rules plus reopen, a second process and a migration, mid-run."""

    with_reopen = True

    def __init__(self) -> None:
        super().__init__()
        self.model: MigratedLedgerModel = MigratedLedgerModel()
        if not isinstance(self.store, SqliteStore) or self.store.path == ":memory:":
            fail(FILE_IDS, f"this machine needs SQLite stores on files, got {self.store!r}")
        self.opener: type[SqliteStore] = type(self.store)
        """The store class of the factory; the child process and the migration use it."""
        self.fired: collections.Counter[str] = collections.Counter()
        """How often each extra rule ran in this program (tests read it)."""

    # -- close and reopen -------------------------------------------------------------------

    @precondition(lambda self: Capability.PERSISTENCE in self.declared)
    @rule()
    def reopen(self) -> None:
        """LED-015: close the file mid-sequence, open it again, and keep going."""
        self.fired["reopen"] += 1
        super().reopen()

    # -- a second process -------------------------------------------------------------------

    @precondition(
        lambda self: Capability.MULTI_PROCESS in self.declared
        and self.fired["process"] < MAX_PROCESSES
    )
    @rule(
        target=LedgerMachineBase.stored_ids,
        conversation=LedgerMachineBase.conversations,
        before=gen.draft_batches(max_size=2),
        during=gen.draft_batches(max_size=2),
        child=gen.draft_batches(max_size=3),
        after=gen.draft_batches(max_size=2),
    )
    def append_from_another_process(
        self,
        conversation: str,
        before: list[EventDraft],
        during: list[EventDraft],
        child: list[EventDraft],
        after: list[EventDraft],
    ) -> MultipleResults[str]:
        """SQL-047: another process appends while this one does; seqs stay 1..n, ids unique.

        This process appends ``before``, then ``during`` while the child appends
        ``child``, then ``after``: each batch must land whole at the head it finds.
        """
        self.fired["process"] += 1
        taken = set(self.model.event_ids)
        before, during, child, after = (
            _fresh(batch, taken) for batch in (before, during, child, after)
        )
        self._append_checked(conversation, before, "before another process appended")
        process = self._start_child(conversation, child)
        assert process.stdin is not None
        try:
            process.stdin.write("go\n")
            process.stdin.flush()
            mine = self._attempt(lambda: self.store.append(conversation, during),
                                 crash=("SQL-047",))
            output, errors = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        if isinstance(mine, Raised):
            fail(("SQL-047",), f"an append beside another process was refused: {mine.error!r}")
        if process.returncode != 0:
            fail(("SQL-047",), f"the other process failed: {errors}")
        theirs = tuple(canonical.encode(wire) for wire in json.loads(output))
        landed = [(tuple(envelope_bytes(e) for e in mine), during), (theirs, child)]
        for got, drafts in sorted(landed, key=lambda pair: _first_seq(pair[0])):
            self._commit_checked(conversation, drafts, got, "beside another process")
        self._append_checked(conversation, after, "after another process appended")
        self.known.add(conversation)
        self._reread_everything()
        return multiple(*(d.event_id for d in (*before, *during, *child, *after)))

    def _append_checked(self, conversation: str, drafts: list[EventDraft], when: str) -> None:
        """SQL-047: an append of fresh valid drafts, which must land at the model's head."""
        placed = self._attempt(lambda: self.store.append(conversation, drafts),
                               crash=("SQL-047",))
        if isinstance(placed, Raised):
            fail(("SQL-047",), f"an append {when} was refused: {placed.error!r}")
        self._commit_checked(conversation, drafts, tuple(envelope_bytes(e) for e in placed), when)

    def _start_child(self, conversation: str, drafts: list[EventDraft]) -> subprocess.Popen[str]:
        """Start the second process on this file; return once it has opened the file."""
        name = f"{self.opener.__module__}:{self.opener.__qualname__}"
        if "<locals>" in name or self.opener.__module__ == "__main__":
            fail(("SQL-047",), f"the store class {name} cannot be imported by another process")
        plan = {
            "store": name,
            "path": self._file().path,
            "conversation": conversation,
            "drafts": [attrs.asdict(draft) for draft in drafts],
        }
        paths = [entry for entry in sys.path if isinstance(entry, str) and entry]
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(plan) + "\n")
        process.stdin.flush()
        if process.stdout.readline().strip() != "ready":
            _, errors = process.communicate(timeout=120)
            fail(("SQL-047",), f"another process could not open the file: {errors}")
        return process

    def _commit_checked(
        self, conversation: str, drafts: list[EventDraft], got: tuple[bytes, ...], when: str
    ) -> None:
        """SQL-047: the batch landed whole at the model's head; commit it to the model."""
        expected = self.model.expect_append(conversation, drafts)
        if isinstance(expected, Refusal) or got != expected:
            fail(("SQL-047",), f"a batch appended {when} to {conversation!r} landed as "
                 f"{got!r}, expected {expected!r}")
        self.model.commit(conversation, expected)

    # -- migration of a version 1 file ------------------------------------------------------

    @precondition(
        lambda self: Capability.MIGRATION in self.declared
        and self.fired["migration"] < MAX_MIGRATIONS
    )
    @rule(
        target=LedgerMachineBase.conversations,
        v1=v1_databases(),
        migrated_at=gen.occurred_at(),
        after=gen.valid_drafts(),
    )
    def migrate_v1_mid_run(
        self, v1: V1Script, migrated_at: str, after: EventDraft
    ) -> MultipleResults[str]:
        """SQL-031 .. SQL-035: migrate a version 1 file, move every ledger into it, go on."""
        number = self.fired["migration"]
        self.fired["migration"] += 1
        rows = v1.rows(f"{OWN_PREFIX}{number}/")
        archives = [self._exported(c) for c in self.model.conversations()]
        directory = Path(tempfile.mkdtemp(prefix="convledger-sqlite-machine-"))
        path = directory / "v1.sqlite"
        write_v1_database(path, rows)
        before = v1_table_rows(path)
        issued: list[str] = []
        counter = itertools.count(1)

        def new_event_id() -> str:
            issued.append(f"{OWN_PREFIX}{number}/baseline-{next(counter)}")
            return issued[-1]

        try:
            migrated = self.opener(path, clock=lambda: migrated_at, new_event_id=new_event_id,
                                   on_close=lambda: shutil.rmtree(directory, ignore_errors=True))
        except Exception as error:
            shutil.rmtree(directory, ignore_errors=True)
            raise CheckFailure(("SQL-031",), f"a valid version 1 file did not migrate: "
                               f"{error!r}") from error
        try:
            if v1_table_rows(path) != before:
                fail(("SQL-035",), "the migration changed rows of the version 1 tables")
            for conversation in rows.conversations:
                self._check_baseline(migrated, rows, conversation, migrated_at, issued)
            for data in archives:
                self._import_into(migrated, data)
        except BaseException:
            migrated.close()
            raise
        self.store.close()
        self.store = migrated
        self.declared = frozenset(migrated.capabilities)
        for index, conversation in enumerate(rows.conversations):
            self._append_after_baseline(conversation, after, f"{OWN_PREFIX}{number}/{index}")
        self.known.update(rows.conversations)
        self._reread_everything()
        return multiple(*rows.conversations)

    def _exported(self, conversation: str) -> bytes:
        """ARC-001: the archive of one ledger of the current store, equal to the model's."""
        expected = self.model.expect_export(conversation)
        data = self._attempt(lambda: self.store.export_conversation(conversation),
                             crash=("ARC-001",))
        if isinstance(data, Raised) or data != expected:
            fail(("ARC-001",), f"export of {conversation!r} is {data!r}, expected {expected!r}")
        return data

    def _import_into(self, migrated: SqliteStore, data: bytes) -> None:
        """ARC-004: an export of the old file imports into the migrated one."""
        outcome = self._attempt(lambda: migrated.import_conversation(data), crash=("ARC-004",))
        if isinstance(outcome, Raised):
            blame = UNEXPECTED_REFUSAL["import"].get(outcome.error.kind, ("ERR-001",))
            fail((*blame, "ARC-004"), f"an export did not import into the migrated file: "
                 f"{outcome.error!r}")

    def _check_baseline(
        self, store: SqliteStore, rows: V1Rows, conversation: str, migrated_at: str,
        issued: list[str],
    ) -> None:
        """SQL-031 .. SQL-034: one ``runtime/baseline`` at seq 1 with the oracle's payload."""
        page = self._attempt(lambda: store.read(conversation, limit=MAX_LIMIT),
                             crash=("SQL-031",))
        if isinstance(page, Raised) or [e.seq for e in page.items] != [1]:
            fail(("SQL-031",), f"migrated {conversation!r} does not hold exactly one event, "
                 f"at seq 1: {page!r}")
        baseline = page.items[0]
        if (baseline.kind, baseline.schema_version, baseline.ignorable) != (
            "runtime/baseline", 1, False
        ):
            fail(("SQL-031", "SQL-032"), f"the event of migrated {conversation!r} is "
                 f"{baseline!r}")
        if baseline.occurred_at != migrated_at or baseline.event_id not in issued:
            fail(("SQL-032",), f"baseline {baseline!r} is not dated {migrated_at!r} by the "
                 f"injected clock, or not named by the injected generator ({issued!r})")
        try:
            self.model.registry.check_payload("runtime/baseline", 1, baseline.payload)
        except Exception as error:
            raise CheckFailure(("SQL-033",), f"the baseline of {conversation!r} breaks its "
                               f"registered schema: {error!r}") from error
        expected = expected_baseline_payload(rows, conversation, migrated_at)
        got = baseline.payload
        if canonical.encode(got) != canonical.encode(expected):
            as_of = got.get("asOf") if isinstance(got, dict) else None
            blame = "SQL-034" if as_of != expected.get("asOf") else "SQL-033"
            fail((blame,), f"baseline payload of {conversation!r} is {got!r}, expected "
                 f"{expected!r}")
        self.model.commit(conversation, [envelope_bytes(baseline)])
        self.model.migrated(conversation, baseline)

    def _append_after_baseline(self, conversation: str, after: EventDraft, name: str) -> None:
        """SQL-031: the next event of a migrated conversation is seq 2."""
        drafts = [attrs.evolve(after, event_id=_fresh_id(name, self.model.event_ids))]
        expected = self.model.expect_append(conversation, drafts)
        placed = self._attempt(lambda: self.store.append(conversation, drafts),
                               crash=("SQL-031",))
        got = None if isinstance(placed, Raised) else tuple(envelope_bytes(e) for e in placed)
        if isinstance(expected, Refusal) or got != expected:
            fail(("SQL-031",), f"the append after the baseline of {conversation!r} gave "
                 f"{placed!r}, expected at seq 2: {expected!r}")
        self.model.commit(conversation, expected)

    # -- helpers ----------------------------------------------------------------------------

    def _reread_everything(self) -> None:
        """After another writer or another file, the invariant reads every ledger whole.

        That is where seqs 1..n, eventIds unique across conversations and the
        model's bytes are checked (LED-002, LED-003, ENV-011, SQL-047).
        """
        self.dirty |= self.known | set(self.model.conversations())

    def _file(self) -> SqliteStore:
        """The current store, an SQLite store on a file (also after reopen, LED-015)."""
        store = self.store
        if not isinstance(store, SqliteStore) or store.path == ":memory:":
            fail(("LED-015",), f"the store is {store!r}, not an SQLite store on a file")
        return store


def sqlite_ledger_machine(factory: StoreFactory) -> type[SqliteLedgerMachine]:
    """:class:`SqliteLedgerMachine` over stores made by ``factory``."""
    return type(
        "SqliteLedgerMachine",
        (SqliteLedgerMachine,),
        {"factory": staticmethod(factory), "__module__": __name__},
    )


@check(*SQLITE_MACHINE_IDS, capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_ledger_state_machine(ctx: CheckContext) -> None:
    """LED-015, SQL-031 .. SQL-035, SQL-047: the machine on a file, reopened, shared, migrated."""
    with fresh_store(ctx) as store:
        if not isinstance(store, SqliteStore) or store.path == ":memory:":
            fail(FILE_IDS, f"this check needs an SQLite store on a file, got {store!r}")
        unchecked = [i for capability, ids in NEEDED.items()
                     if capability not in store.capabilities for i in ids]
        if unchecked:
            fail(unchecked, "a store on a file must declare persistence, migration and "
                 "multi_process (SQL-048); without them these ids cannot be checked")
    run_state_machine_as_test(sqlite_ledger_machine(ctx.factory),
                              settings=settings_for(ctx.profile))


# -- small helpers -------------------------------------------------------------------------


def _fresh_id(candidate: str, taken: set[str]) -> str:
    """``candidate``, primed until no stored or used eventId equals it."""
    while candidate in taken:
        candidate += "'"
    return candidate


def _fresh(batch: list[EventDraft], taken: set[str]) -> list[EventDraft]:
    """The batch with each eventId made fresh against ``taken`` (which then holds them)."""
    fresh = []
    for draft in batch:
        event_id = _fresh_id(draft.event_id, taken)
        taken.add(event_id)
        fresh.append(attrs.evolve(draft, event_id=event_id))
    return fresh


def _first_seq(envelopes: tuple[bytes, ...]) -> int:
    """The seq of the first envelope of a returned batch (0 for none)."""
    wire = canonical.decode(envelopes[0]) if envelopes else None
    seq = wire.get("seq") if isinstance(wire, dict) else None
    return seq if isinstance(seq, int) else 0

