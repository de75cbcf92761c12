"""Checks of chapter SPL: put, get with authorization recheck, delete, archives and bundles.

A corrupted object cannot be made through the store interface; SPL-022 is
checked where the bytes can be reached (``sqlite_issue5.py`` for SQLite
files). The state machine of :mod:`convledger_conformance.spills.machine` puts,
gets, revokes and deletes at random.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from typing import Final

import cbor2
from hypothesis.stateful import run_state_machine_as_test

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.interface import require
from convledger.spills.store import SpillStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.profiles import scaled
from convledger_conformance.projections.model import loose
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import SPILL_BYTES as MAX_SPILL_BYTES
from convledger_conformance.spills.machine import build_spill_machine
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    drafts,
    fail,
    fresh_store,
    refused,
    run_once,
    untyped,
)

SPL: Final = Capability.SPILLS
OPERATION: dict[str, JsonValue] = {"operationId": "op-1", "authorization": {"user": "u-1"}}


def put(store: SpillStore, cid: str, reference: str, data: bytes, event_id: str,
        *, operation: dict[str, JsonValue] | None = None, media_type: str = "text/plain") -> None:
    """A put with the defaults of these checks."""
    store.put_spill(cid, data, media_type=media_type, operation=operation or OPERATION,
                    reference=reference, event_id=event_id, occurred_at=STAMP)


def allow(_: JsonValue) -> bool:
    """A callback that grants everything."""
    return True


@check("SPL-001", "SPL-010", "SPL-020", capability=SPL)
def check_put_then_get_asks_every_time(ctx: CheckContext) -> None:
    """SPL-001, SPL-010, SPL-020: one event per put; every get asks the callback again."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        store.append("c", drafts("c", 2))
        metadata = s.put_spill("c", b"\x00bytes\xff", media_type="application/octet-stream",
                               operation=OPERATION, reference="r", event_id="s-1",
                               occurred_at=STAMP)
        event = store.read("c", from_seq=3).items
        want = {"reference": "r", "bytes": 7, "mediaType": "application/octet-stream",
                "sha256": hashlib.sha256(b"\x00bytes\xff").hexdigest()}
        if (len(event) != 1 or event[0].kind != "spill/created" or event[0].event_id != "s-1"
                or canonical.encode(event[0].payload) != canonical.encode(want)):
            fail("SPL-001", f"put_spill appended {event!r}")
        if (metadata.created_seq, metadata.size, metadata.sha256) != (3, 7, want["sha256"]):
            fail("SPL-010", f"put_spill answered {metadata!r}")
        asked: list[JsonValue] = []

        def recording(descriptor: JsonValue) -> bool:
            asked.append(descriptor)
            if isinstance(descriptor, dict):
                descriptor["user"] = "mallory"  # a callback cannot change what is stored
            return True

        for _ in range(3):
            if s.get_spill("c", "r", authorize=recording) != b"\x00bytes\xff":
                fail("SPL-020", "get_spill returned other bytes")
        if asked != [{"user": "mallory"}] * 3 or s.get_spill(
            "c", "r", authorize=lambda d: d == {"user": "u-1"}
        ) != b"\x00bytes\xff":
            fail("SPL-020", f"the callback was asked {len(asked)} times or with {asked!r}")

    run_once(ctx, body)


@check("SPL-020", "SPL-023", capability=SPL)
def check_revocation_denies(ctx: CheckContext) -> None:
    """SPL-020, SPL-023: a revoked, truthy-but-not-True or raising callback is unauthorized."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        put(s, "c", "r", b"secret", "s-1")
        granted = {"now": True}
        revocable: Callable[[JsonValue], bool] = lambda _: granted["now"]  # noqa: E731
        if s.get_spill("c", "r", authorize=revocable) != b"secret":
            fail("SPL-020", "an authorized get failed")
        granted["now"] = False

        def raising(_: JsonValue) -> bool:
            raise PermissionError("revoked")

        for what, callback in (("revoked", revocable), ("1", lambda _: 1),
                               ("'yes'", lambda _: "yes"), ("None", lambda _: None),
                               ("raising", raising)):
            refused(partial(s.get_spill, "c", "r", authorize=loose(callback)), "unauthorized",
                    "SPL-020", f"get_spill with a {what} callback", store=store, touched=["c"])
        refused(partial(s.get_spill, "c", "r", authorize=loose(None)), "invalid_input",
                "SPL-020", "get_spill without a callback")

    run_once(ctx, body)


@check("SPL-021", capability=SPL)
def check_other_conversations_reference_unknown(ctx: CheckContext) -> None:
    """SPL-021: a reference of another conversation answers exactly like an unknown one."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        put(s, "a", "shared-name", b"of a", "s-a")
        store.append("b", [draft("b-1")])
        calls: list[JsonValue] = []

        def spy(descriptor: JsonValue) -> bool:
            calls.append(descriptor)
            return True

        for reference in ("shared-name", "never"):
            refused(partial(s.get_spill, "b", reference, authorize=spy), "not_found", "SPL-021",
                    f"get_spill of {reference!r} from another conversation")
        if calls:
            fail("SPL-021", "the callback was asked about another conversation's object")

    run_once(ctx, body)


def _bad_puts() -> list[tuple[str, dict[str, object]]]:
    good: dict[str, object] = {"data": b"ok", "media_type": "text/plain",
                               "operation": OPERATION, "reference": "r-bad",
                               "event_id": "bad-event", "occurred_at": STAMP}
    cases: list[tuple[str, dict[str, object]]] = []
    for field, value, requirement in (
        ("data", bytearray(b"ok"), "SPL-002"), ("data", memoryview(b"ok"), "SPL-002"),
        ("data", "ok", "SPL-002"), ("data", None, "SPL-002"),
        ("data", b"\x00" * (MAX_SPILL_BYTES + 1), "SPL-003"),
        ("media_type", "", "SPL-004"), ("media_type", "Text/Plain", "SPL-004"),
        ("media_type", "text", "SPL-004"), ("media_type", "text/plain; x", "SPL-004"),
        ("media_type", "a/" + "b" * 300, "SPL-004"), ("media_type", 3, "SPL-004"),
        ("reference", "", "SPL-005"), ("reference", "x" * 1025, "SPL-005"),
        ("reference", 5, "SPL-005"),
        ("operation", {"operationId": "op"}, "SPL-006"),
        ("operation", {"operationId": "", "authorization": {}}, "SPL-006"),
        ("operation", {"operationId": "op", "authorization": "all"}, "SPL-006"),
        ("operation", {"operationId": "op", "authorization": {}, "x": 1}, "SPL-006"),
        ("operation", {"operationId": "op", "authorization": {"n": float("nan")}}, "SPL-006"),
        ("event_id", "", "ENV-004"), ("occurred_at", "yesterday", "ENV-008"),
    ):
        cases.append((requirement, {**good, field: value}))
    return cases


@check("SPL-002", "SPL-003", "SPL-004", "SPL-005", "SPL-006", "ERR-004", capability=SPL)
def check_bad_puts_refused(ctx: CheckContext) -> None:
    """SPL-002 .. SPL-006: non-bytes, oversize, bad media types, ids, operations: invalid_input."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        put(s, "c", "kept", b"kept", "s-kept")
        before = store.export_bundle("c") if hasattr(store, "export_bundle") else b""
        for requirement, arguments in _bad_puts():
            call = partial(untyped(s).put_spill, "c", arguments.pop("data"), **arguments)
            refused(call, "invalid_input", requirement,
                    f"put_spill with {requirement} broken", store=store, touched=["c"],
                    unchanged="ERR-004")
            refused(partial(s.get_spill, "c", "r-bad", authorize=allow), "not_found", "ERR-004",
                    "get_spill of a refused put")
        if s.export_bundle("c") != before:
            fail("ERR-004", "refused puts changed the bundle of the conversation")

    run_once(ctx, body)


@check("SPL-007", "SPL-008", capability=SPL)
def check_live_references_unique(ctx: CheckContext) -> None:
    """SPL-007, SPL-008: a live reference is put once; appends may not name it."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        put(s, "c", "r", b"one", "s-1")
        refused(partial(put, s, "c", "r", b"two", "s-2"), "duplicate", "SPL-007",
                "a second put of a live reference", store=store, touched=["c"])
        refused(partial(put, s, "c", "other", b"x", "s-1"), "duplicate", "SPL-007",
                "a put whose eventId exists", store=store, touched=["c"])
        forged: tuple[tuple[str, JsonValue], ...] = (
            ("spill/deleted", {"reference": "r", "bytes": 3}),
            ("spill/created", {"reference": "r", "bytes": 1, "sha256": "0" * 64,
                               "mediaType": "a/b"}),
        )
        for kind, payload in forged:
            refused(partial(store.append, "c", [draft(f"forged-{kind}", kind=kind,
                                                      payload=payload)]),
                    "invalid_input", "SPL-008", f"an appended {kind} of a live object",
                    store=store, touched=["c"])
            refused(partial(store.append, "c", [draft(f"plain-{kind}"),
                                                draft(f"later-{kind}", kind=kind,
                                                      payload=payload)]),
                    "invalid_input", "SPL-008",
                    f"a batch whose {kind} of a live object follows an ordinary event",
                    store=store, touched=["c"])
        s.delete_spill("c", "r", event_id="d-1", occurred_at=STAMP)
        accepted(partial(put, s, "c", "r", b"again", "s-3"), "SPL-007", "a put after delete")
        if s.get_spill("c", "r", authorize=allow) != b"again":
            fail("SPL-007", "the reference put again does not give its new bytes")
        put(s, "d", "r", b"elsewhere", "s-4")  # the same reference in another conversation

    run_once(ctx, body)


@check("SPL-030", "SPL-031", "LED-003", capability=SPL)
def check_delete_and_expiry(ctx: CheckContext) -> None:
    """SPL-030, SPL-031: delete appends spill/deleted; afterwards the reference is not found.

    LED-003: a delete whose eventId is already stored is refused ``duplicate`` and the
    object stays live (found by mutation testing, ``scripts/mutation.py``).
    """

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        put(s, "c", "r", b"abc", "s-1")
        put(s, "c", "q", b"", "s-2")
        refused(partial(s.delete_spill, "c", "r", reason="gone", event_id="d-0",
                        occurred_at=STAMP), "invalid_input", "SPL-030", "an unknown reason",
                store=store, touched=["c"])
        refused(partial(s.delete_spill, "c", "r", event_id="s-1", occurred_at=STAMP),
                "duplicate", "LED-003", "a delete whose eventId 's-1' is stored (the put's event)",
                store=store, touched=["c"])
        deleted = s.delete_spill("c", "r", event_id="d-1", occurred_at=STAMP)
        expired = s.delete_spill("c", "q", reason="expired", event_id="d-2", occurred_at=STAMP)
        wants = [({"reference": "r", "bytes": 3, "reason": "deleted"}, 3, deleted),
                 ({"reference": "q", "bytes": 0, "reason": "expired"}, 4, expired)]
        for payload, seq, envelope in wants:
            if (envelope.kind, envelope.seq) != ("spill/deleted", seq) or canonical.encode(
                envelope.payload
            ) != canonical.encode(payload):
                fail("SPL-030", f"delete_spill appended {envelope!r}")
        for reference in ("r", "q", "never"):
            refused(partial(s.get_spill, "c", reference, authorize=allow), "not_found",
                    "SPL-031", f"get_spill of deleted {reference!r}")
            refused(partial(s.delete_spill, "c", reference, event_id=f"again-{reference}",
                            occurred_at=STAMP), "not_found", "SPL-031",
                    f"delete of {reference!r} again", store=store, touched=["c"])

    run_once(ctx, body)


def _document(data: bytes) -> dict[str, object]:
    decoded = canonical.decode(data)
    assert isinstance(decoded, dict)
    return decoded


@check("SPL-040", "SPL-042", "SPL-044", capability=SPL)
def check_archives_carry_metadata_only(ctx: CheckContext) -> None:
    """SPL-040, SPL-042, SPL-044: the JSON archive lists live objects; its plain import refuses."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        store.append("c", drafts("c", 1))
        if b'"spills"' in store.export_conversation("c"):
            fail("SPL-040", "an archive without live objects carries a spills companion")
        put(s, "c", "zz", b"last", "s-1")
        put(s, "c", "aa", b"first", "s-2")
        put(s, "c", "gone", b"x", "s-3")
        s.delete_spill("c", "gone", event_id="d-1", occurred_at=STAMP)
        put(s, "c", "\U0001f600", b"emoji", "s-4")  # UTF-16 code units put U+1F600 first
        put(s, "c", "\ufb01", b"ligature", "s-5")
        data = store.export_conversation("c")
        companions = _document(data)["companions"]
        assert isinstance(companions, dict)
        listed = [(e["reference"], e["createdSeq"]) for e in companions.get("spills", [])]
        if listed != [("aa", 3), ("zz", 2), ("\ufb01", 7), ("\U0001f600", 6)]:
            fail(("SPL-040", "SPL-044"), f"the spills companion lists {listed!r}")
        if b"first" in data or b"last" in data:
            fail("SPL-040", "the JSON archive carries spill bytes")
        with fresh_store(ctx) as target:
            refused(partial(target.import_conversation, data), "invalid_input", "SPL-042",
                    "a plain import of an archive with spills", store=target, touched=["c"])

    run_once(ctx, body)


@check("SPL-050", "SPL-052", "SPL-054", "SPL-055", capability=SPL)
def check_bundles_round_trip(ctx: CheckContext) -> None:
    """SPL-050 .. SPL-055: a bundle carries the bytes; import answers gets; re-export is equal."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        store.append("c", drafts("c", 2))
        put(s, "c", "b", bytes(range(256)), "s-1", media_type="application/octet-stream")
        put(s, "c", "a", b"", "s-2")
        bundle = s.export_bundle("c")
        document = cbor2.loads(bundle)
        if set(document) != {"archive", "format", "formatVersion", "objects"} or document[
            "archive"
        ] != store.export_conversation("c") or document["objects"] != [
            ["a", b""], ["b", bytes(range(256))]
        ] or cbor2.dumps(document, canonical=True) != bundle:
            fail("SPL-050", "the bundle is not the deterministic CBOR map of SPL-050")
        with fresh_store(ctx) as target:
            t = require(target, SPL)
            accepted(partial(t.import_bundle, bundle), "SPL-055", "import_bundle")
            if t.export_bundle("c") != bundle:
                fail("SPL-052", "re-export of an imported bundle gives other bytes")
            if t.get_spill("c", "b", authorize=lambda d: d == {"user": "u-1"}) != bytes(
                range(256)
            ):
                fail("SPL-055", "an imported object does not answer get_spill")
            refused(partial(t.get_spill, "c", "b", authorize=lambda _: False), "unauthorized",
                    "SPL-055", "an imported object with a denying callback")

    run_once(ctx, body)


def _rebundle(bundle: bytes, change: Callable[[dict[str, object]], None]) -> bytes:
    document = cbor2.loads(bundle)
    change(document)
    return cbor2.dumps(document, canonical=True)


def _archive_change(change: Callable[[dict[str, object]], None]) -> Callable[
    [dict[str, object]], None
]:
    def apply(document: dict[str, object]) -> None:
        archive = _document(document["archive"])  # type: ignore[arg-type]
        change(archive)
        document["archive"] = canonical.encode(archive)

    return apply


@check("SPL-041", "SPL-043", "SPL-051", "SPL-053", capability=SPL)
def check_bundle_imports_checked(ctx: CheckContext) -> None:
    """SPL-041, SPL-043, SPL-051, SPL-053: every byte, size, hash and member is checked."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        put(s, "c", "r", b"payload", "s-1")
        bundle = s.export_bundle("c")

        def objects(document: dict[str, object]) -> list[list[object]]:
            found = document["objects"]
            assert isinstance(found, list)
            return found

        def entry(archive: dict[str, object]) -> dict[str, object]:
            return archive["companions"]["spills"][0]  # type: ignore[index,no-any-return]

        cases: list[tuple[str, str, str, bytes]] = [
            ("SPL-053", "integrity", "changed bytes",
             _rebundle(bundle, lambda d: objects(d)[0].__setitem__(1, b"PAYLOAD"))),
            ("SPL-053", "integrity", "truncated bytes",
             _rebundle(bundle, lambda d: objects(d)[0].__setitem__(1, b"pay"))),
            ("SPL-051", "invalid_input", "a missing object",
             _rebundle(bundle, lambda d: objects(d).clear())),
            ("SPL-051", "invalid_input", "an extra member",
             _rebundle(bundle, lambda d: d.__setitem__("extra", 1))),
            ("SPL-051", "not_supported", "formatVersion 2",
             _rebundle(bundle, lambda d: d.__setitem__("formatVersion", 2))),
            ("SPL-051", "invalid_input", "non-deterministic CBOR",
             cbor2.dumps(dict(reversed(list(cbor2.loads(bundle).items()))))),
            ("SPL-051", "invalid_input", "not CBOR", b"\xff\x00garbage"),
            ("SPL-051", "invalid_input", "an empty input", b""),
            ("SPL-043", "integrity", "an entry that is not the ledger's",
             _rebundle(bundle, _archive_change(lambda a: entry(a).update(createdSeq=2)))),
            ("SPL-041", "invalid_input", "an entry with an extra member",
             _rebundle(bundle, _archive_change(lambda a: entry(a).update(extra=1)))),
        ]
        with fresh_store(ctx) as target:
            t = require(target, SPL)
            for requirement, kind, what, data in cases:
                refused(partial(t.import_bundle, data), kind, requirement, f"a bundle with {what}",
                        store=target, touched=["c"])
            refused(partial(t.import_bundle, loose("text")), "invalid_input", "SPL-051",
                    "a bundle that is not bytes")
            refused(partial(t.get_spill, "c", "r", authorize=allow), "not_found", "SPL-053",
                    "get_spill after refused bundles")

    run_once(ctx, body)


@check("SPL-020", "SPL-021", "SPL-031", capability=SPL)
def check_spill_machine(ctx: CheckContext) -> None:
    """SPL-020, SPL-021, SPL-031: random puts, gets, revocations and deletes leak no bytes."""
    machine = build_spill_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=scaled(ctx.profile, share=0.5))
