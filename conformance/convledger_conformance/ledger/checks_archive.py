"""Checks of chapter ARC: export, import and their refusals."""

from __future__ import annotations

import contextlib
import threading
from functools import partial

from hypothesis import strategies as st

from convledger import canonical
from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.store import LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger import strategies_archive as arc
from convledger_conformance.ledger import strategies_kinds as knd
from convledger_conformance.ledger.model import LedgerModel, Refusal, archive_bytes
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    accepted,
    archive,
    draft,
    drafts,
    expect_same_bytes,
    fail,
    ledger_bytes,
    refused,
    run_once,
    run_property,
    untyped,
    wires,
)


def _refuses_faults(store: LedgerStore, requirement: str, batch: list[EventDraft]) -> None:
    """Every fault of :data:`arc.ARCHIVE_FAULTS` naming ``requirement`` gets its kind."""
    base = arc.document_of("hostile", arc.placed("hostile", batch))
    for name, fault in arc.ARCHIVE_FAULTS.items():
        if requirement in fault.ids:
            refused(partial(untyped(store).import_conversation, fault.make(base)), fault.kind,
                    requirement, f"import of an archive with fault {name!r}", store=store,
                    touched=["hostile", "hostile/other"])


def _fault_check(requirement: str) -> None:
    """Register a check that imports every hostile archive of ``requirement``."""

    def run(ctx: CheckContext) -> None:
        def body(store: LedgerStore, batch: list[EventDraft]) -> None:
            _refuses_faults(store, requirement, [*batch, draft("hostile-extra")])

        batches = gen.draft_batches(max_size=3).map(
            lambda b: [d for d in b if d.event_id != "hostile-extra"]
        )
        run_property(ctx, body, batches, share=0.5)

    faults = ", ".join(n for n, f in arc.ARCHIVE_FAULTS.items() if requirement in f.ids)
    run.__name__ = f"check_archive_faults_{requirement.lower().replace('-', '_')}"
    run.__doc__ = f"{requirement}: import refuses archives with {faults}, changing nothing."
    check(requirement)(run)


for _requirement in ("ARC-003", "ARC-006", "ARC-007", "ARC-008", "ARC-011"):
    _fault_check(_requirement)


@check("ARC-001", "ARC-002")
def check_export_is_the_archive(ctx: CheckContext) -> None:
    """ARC-001, ARC-002: an export is the canonical archive of every event, in seq order."""

    def body(store: LedgerStore, first: list[EventDraft], second: list[EventDraft]) -> None:
        model = LedgerModel()
        seen = {d.event_id for d in first}
        second = [d for d in second if d.event_id not in seen]
        for batch in (first, second):
            if batch:
                expected = model.expect_append("c", batch)
                assert not isinstance(expected, Refusal)
                store.append("c", batch)
                model.commit("c", expected)
        exported = store.export_conversation("c")
        document = canonical.decode(exported)
        if not isinstance(document, dict) or set(document) != {
            "format", "formatVersion", "conversationId", "events", "companions"
        }:
            fail("ARC-002", f"an export is not an archive object: {exported!r}")
        if (document["format"], document["formatVersion"], document["conversationId"],
                document["companions"]) != ("convledger.archive", 1, "c", {}):
            fail("ARC-002", "an export has the wrong format, version, conversation or companions")
        expect_same_bytes("ARC-001", "an export is not the canonical archive of the ledger",
                          expected=archive_bytes("c", model.events("c")), got=exported)

    run_property(ctx, body, gen.draft_batches(), gen.draft_batches(min_size=0))


@check("ARC-002")
def check_archive_shape_refused(ctx: CheckContext) -> None:
    """ARC-002: wrong format or members are invalid_input; formatVersion not 1 not_supported."""

    def body(store: LedgerStore) -> None:
        _refuses_faults(store, "ARC-002", drafts("shape", 2))
        base = arc.document_of("hostile", arc.placed("hostile", drafts("shape", 1)))
        for version in (0, 2, 10):
            data = canonical.encode({**base, "formatVersion": version})
            refused(partial(store.import_conversation, data), "not_supported", "ARC-002",
                    f"import of formatVersion {version}", store=store, touched=["hostile"])
        for name in sorted(base):
            data = canonical.encode({k: v for k, v in base.items() if k != name})
            refused(partial(store.import_conversation, data), "invalid_input", "ARC-002",
                    f"import without member {name}", store=store, touched=["hostile"])
        texts: tuple[object, ...] = ([], "x", 1, None)
        for value in texts:
            refused(partial(store.import_conversation, canonical.encode(value)), "invalid_input",
                    "ARC-002", f"import of the JSON text {value!r}", store=store)

    run_once(ctx, body)


@check("ARC-004", "ARC-016")
def check_archive_round_trip(ctx: CheckContext) -> None:
    """ARC-004, ARC-016: exports repeat; an imported archive keeps every member and re-exports."""

    def body(
        store: LedgerStore,
        batch: list[EventDraft],
        unknown: list[tuple[str, tuple[str, int, object], str]],
    ) -> None:
        events = arc.placed("c", batch)
        taken = {d.event_id for d in batch}
        for event_id, (kind, version, payload), stamp in unknown:
            if event_id not in taken:
                taken.add(event_id)
                events.append({"schemaVersion": version, "eventId": event_id,
                               "conversationId": "c", "seq": len(events) + 1, "kind": kind,
                               "occurredAt": stamp, "payload": payload, "ignorable": True})
        data = archive("c", events)
        accepted(partial(store.import_conversation, data), "ARC-016", "import")
        if ledger_bytes(store, "c") != tuple(canonical.encode(w) for w in events):
            fail("ARC-016", "imported envelopes read back with other members")
        first, second = store.export_conversation("c"), store.export_conversation("c")
        if first != data or second != first:
            fail("ARC-004", "exports of an imported conversation differ from the archive")

    unknowns = st.lists(st.tuples(gen.identifiers(), knd.unknown_ignorable_events(),
                                  gen.occurred_at()), max_size=3)
    run_property(ctx, body, gen.draft_batches(), unknowns)


@check("ARC-005")
def check_empty_conversations(ctx: CheckContext) -> None:
    """ARC-005: exporting no events is not_found; an archive without events is invalid_input."""

    def body(store: LedgerStore) -> None:
        refused(partial(store.export_conversation, "never"), "not_found", "ARC-005",
                "export of a conversation without events", store=store, touched=["never"])
        with contextlib.suppress(LedgerError):
            store.append("never", [gen.broken_draft({"kind": gen.UNKNOWN_KIND})])
        if store.head("never") == 0:
            refused(partial(store.export_conversation, "never"), "not_found", "ARC-005",
                    "export after a refused append", store=store, touched=["never"])
        _refuses_faults(store, "ARC-005", drafts("empty", 1))
        shapes: tuple[object, ...] = (None, "x", 1, {"0": {}})
        for events in shapes:
            data = canonical.encode({**arc.document_of("hostile", []), "events": events})
            refused(partial(store.import_conversation, data), "invalid_input", "ARC-005",
                    f"import with events {events!r}", store=store, touched=["hostile"])

    run_once(ctx, body)


@check("ARC-009")
def check_import_into_occupied(ctx: CheckContext) -> None:
    """ARC-009: import into a conversation with events is a conflict, changing nothing."""

    def body(store: LedgerStore, held: list[EventDraft], incoming: list[EventDraft]) -> None:
        store.append("c", held)
        fresh = [d for d in incoming if d.event_id not in {h.event_id for h in held}]
        if fresh:
            refused(partial(store.import_conversation, archive("c", wires("c", fresh))),
                    "conflict", "ARC-009", "import into an occupied conversation", store=store,
                    touched=["c"])

    run_property(ctx, body, gen.draft_batches(), gen.draft_batches())


@check("ARC-010")
def check_import_of_stored_event_id(ctx: CheckContext) -> None:
    """ARC-010: an archive holding an eventId stored anywhere is a duplicate, changing nothing."""

    def body(store: LedgerStore, held: list[EventDraft], incoming: list[EventDraft],
             position: int) -> None:
        store.append("elsewhere", held)
        batch = [d for d in incoming if d.event_id not in {h.event_id for h in held}]
        batch.insert(position % (len(batch) + 1), held[position % len(held)])
        refused(partial(store.import_conversation, archive("c", wires("c", batch))),
                "duplicate", "ARC-010", "import of a stored eventId", store=store,
                touched=["c", "elsewhere"])

    run_property(ctx, body, gen.draft_batches(), gen.draft_batches(min_size=0),
                 st.integers(0, 4))


@check("ARC-012")
def check_import_replay_gate(ctx: CheckContext) -> None:
    """ARC-012: unknown non-ignorable is replay_refused; ENV or schema breaks are invalid_input."""

    def body(store: LedgerStore, batch: list[EventDraft]) -> None:
        _refuses_faults(store, "ARC-012", [*batch, draft("gate-extra")])
        flagged = arc.placed("gate", [draft("gate-1", ignorable=True)])
        flagged[0]["payload"] = {"not": "a state/set payload"}
        refused(partial(store.import_conversation, archive("gate", flagged)), "invalid_input",
                "ARC-012", "import of a registered ignorable event breaking its schema",
                store=store, touched=["gate"])
        unknown = [{**flagged[0], "kind": gen.UNKNOWN_KIND}]
        data = archive("gate", unknown)
        accepted(partial(store.import_conversation, data), "ARC-012",
                 "import of an unknown ignorable event")
        expect_same_bytes("ARC-012",
                          "an unknown ignorable event was not stored exactly as received",
                          expected=data, got=store.export_conversation("gate"))

    run_property(ctx, body, gen.draft_batches(max_size=2).map(
        lambda b: [d for d in b if not d.event_id.startswith("gate")]))


@check("ARC-013")
def check_refused_import_stores_nothing(ctx: CheckContext) -> None:
    """ARC-013: a refused archive leaves no event, seq or eventId behind."""

    def body(store: LedgerStore, batch: list[EventDraft], fault: str) -> None:
        events = arc.placed("c", batch)
        bad = arc.ARCHIVE_FAULTS[fault].make(arc.document_of("c", events))
        refused(partial(untyped(store).import_conversation, bad), arc.ARCHIVE_FAULTS[fault].kind,
                "ARC-013", f"import with fault {fault!r}", store=store, touched=["c", "c/other"])
        good = archive("c", events)
        accepted(partial(store.import_conversation, good), "ARC-013",
                 "import of the same events after the refusal")
        expect_same_bytes("ARC-013", "the archive imported after a refused one came back different",
                          expected=good, got=store.export_conversation("c"))

    late = [name for name, f in arc.ARCHIVE_FAULTS.items() if f.ids[0] in (
        "ARC-007", "ARC-008", "ARC-012", "ARC-006")]
    run_property(ctx, body, gen.draft_batches(min_size=2), st.sampled_from(sorted(late)))


@check("ARC-014")
def check_export_is_a_snapshot(ctx: CheckContext) -> None:
    """ARC-014: an export during concurrent appends holds each batch wholly or not at all."""

    def body(store: LedgerStore, batches: int, size: int) -> None:
        store.append("c", drafts("seed", size))
        done = threading.Event()
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                for number in range(batches):
                    store.append("c", drafts(f"b{number}", size))
            except BaseException as error:  # reported on the main thread
                errors.append(error)
            finally:
                done.set()

        thread = threading.Thread(target=writer)
        thread.start()
        exports: list[bytes] = []
        while not done.is_set() or not exports:
            exports.append(store.export_conversation("c"))
        thread.join()
        if errors:
            fail("ARC-014", f"an append during exports failed: {errors[0]!r}")
        final = canonical.decode(store.export_conversation("c"))
        assert isinstance(final, dict)
        for data in exports:
            document = canonical.decode(data)
            assert isinstance(document, dict)
            count = len(document["events"])
            if count % size or document["events"] != final["events"][:count]:
                fail("ARC-014", f"an export caught {count} events, not whole batches of {size}")

    run_property(ctx, body, st.integers(5, 30), st.integers(2, 4), share=0.2)
