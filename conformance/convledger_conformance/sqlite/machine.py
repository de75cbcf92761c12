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

The second process is started once per run and reused by its programs (a Python
start costs a few tenths of a second); each plan opens the file with a new store
and closes it. A program runs the rule at most :data:`MAX_PROCESSES` times and
at most :data:`MAX_MIGRATIONS` migrations.
A store on ``:memory:`` has none of these rules; it runs the plain ledger
machine (``tests/test_sqlite_machine.py``). The version 1 files, the oracle and
the model of migrated conversations are in
:mod:`~convledger_conformance.sqlite.machine_migration`; the second process's
script is in :mod:`~convledger_conformance.sqlite.machine_process`.
"""

from __future__ import annotations

import collections
import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Final

import attrs
from hypothesis.stateful import (
    MultipleResults,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from convledger import canonical
from convledger.envelope import EventDraft
from convledger.sqlite import SqliteStore
from convledger.sqlite.fixtures import V1Rows, v1_table_rows, write_v1_database
from convledger.store import Capability
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.machine import (
    MACHINE_IDS,
    UNEXPECTED_REFUSAL,
    LedgerMachineBase,
    Raised,
    fail,
)
from convledger_conformance.ledger.model import MAX_LIMIT, Refusal, envelope_bytes
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import CheckContext, CheckFailure, StoreFactory, check
from convledger_conformance.sqlite.machine_migration import (
    MigratedLedgerModel,
    V1Script,
    expected_baseline_payload,
    v1_databases,
)
from convledger_conformance.sqlite.machine_process import (
    OtherProcess,
    _first_seq,
    _fresh,
    _fresh_id,
)
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


# -- the machine ---------------------------------------------------------------------------


class SqliteLedgerMachine(LedgerMachineBase):
    """The ledger rules plus reopen, a second process and a migration, mid-run."""

    with_reopen = True
    other: OtherProcess
    """The second process of ``append_from_another_process``, shared by the run's programs."""

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
        self._open_other(conversation, child)
        self.other.go()
        mine = self._attempt(lambda: self.store.append(conversation, during), crash=("SQL-047",))
        answer = self.other.answer()
        if isinstance(mine, Raised):
            fail(("SQL-047",), f"an append beside another process was refused: {mine.error!r}")
        theirs = tuple(canonical.encode(wire) for wire in answer)
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

    def _open_other(self, conversation: str, drafts: list[EventDraft]) -> None:
        """Have the second process open this file; return once it has."""
        name = f"{self.opener.__module__}:{self.opener.__qualname__}"
        if "<locals>" in name or self.opener.__module__ == "__main__":
            fail(("SQL-047",), f"the store class {name} cannot be imported by another process")
        self.other.open({
            "store": name,
            "path": self._file().path,
            "conversation": conversation,
            "drafts": [attrs.asdict(draft) for draft in drafts],
        })

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
    """:class:`SqliteLedgerMachine` over stores made by ``factory``.

    Its programs share one second process; close it with ``machine.other.close()``
    (it also ends when this process does).
    """
    return type(
        "SqliteLedgerMachine",
        (SqliteLedgerMachine,),
        {"factory": staticmethod(factory), "other": OtherProcess(), "__module__": __name__},
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
    machine = sqlite_ledger_machine(ctx.factory)
    try:
        run_state_machine_as_test(machine, settings=settings_for(ctx.profile))
    finally:
        machine.other.close()
