"""Checks of chapter KND: the kind registry as the store enforces it."""

from __future__ import annotations

from functools import partial

from hypothesis import strategies as st

from convledger.canonical import JsonValue
from convledger.kinds import load_registry_document
from convledger.store import LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger import strategies_kinds as knd
from convledger_conformance.ledger.model_faults import NEVER_APPENDED
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import MAX_SAFE_INTEGER
from convledger_conformance.support import (
    STAMP,
    accepted,
    archive,
    draft,
    fail,
    ledger_bytes,
    refused,
    run_once,
    run_property,
)


def registered_pairs() -> list[tuple[str, int]]:
    """Every ``(kind, schemaVersion)`` of the shipped ``kinds.json`` (KND-001)."""
    entries = load_registry_document()["kinds"]
    assert isinstance(entries, list)
    pairs = []
    for entry in entries:
        assert isinstance(entry, dict)
        kind, version = entry["kind"], entry["schemaVersion"]
        assert isinstance(kind, str) and isinstance(version, int)
        pairs.append((kind, version))
    return pairs


def _breaking(payload: JsonValue) -> list[JsonValue]:
    """Payloads every registered schema rejects, given a valid one (all are closed objects)."""
    assert isinstance(payload, dict)
    return [{}, [], None, "text", {**payload, "conformance/extra": 1}]


@check("KND-001", "TRN-108")
def check_registry_is_kinds_json(ctx: CheckContext) -> None:
    """KND-001: exactly the pairs of kinds.json are appendable, each with its schema.

    The runtime kinds are registered but written by transitions and migration
    only: their appends are refused with invalid_input instead (TRN-108).
    """

    def body(store: LedgerStore) -> None:
        pairs = registered_pairs()
        missing = set(pairs) - set(knd.EXAMPLE_PAYLOADS)
        assert not missing, f"the suite has no example payload for {sorted(missing)}"
        for number, (kind, version) in enumerate(pairs):
            example = knd.EXAMPLE_PAYLOADS[(kind, version)]
            event = draft(f"k{number}", kind=kind, payload=example, schema_version=version)
            if kind in NEVER_APPENDED:
                refused(partial(store.append, "c", [event]), "invalid_input", "TRN-108",
                        f"append of registered {kind!r} v{version}", store=store,
                        touched=["c"])
                continue
            accepted(partial(store.append, "c", [event]), "KND-001",
                     f"append of registered {kind!r} v{version}")
            if (kind, version + 1) not in pairs:
                later = draft(f"k{number}-next", kind=kind, payload=example,
                              schema_version=version + 1)
                refused(partial(store.append, "c", [later]), "invalid_input", "KND-001",
                        f"append of unregistered {kind!r} v{version + 1}", store=store,
                        touched=["c"])
        for kind in ("State/Set", "state/set ", "state", "x-conformance/unknown"):
            odd = draft("odd", kind=kind)
            refused(partial(store.append, "c", [odd]), "invalid_input", "KND-001",
                    f"append of unregistered kind {kind!r}", store=store, touched=["c"])

    run_once(ctx, body)


@check("KND-002")
def check_unregistered_pairs_refused(ctx: CheckContext) -> None:
    """KND-002: an append of any unregistered pair is invalid_input, ignorable or not."""

    def body(store: LedgerStore, kind: str, version: int, ignorable: bool) -> None:
        if (kind, version) in set(registered_pairs()):
            return
        event = draft("u", kind=kind, schema_version=version, ignorable=ignorable,
                      payload={"any": "payload"})
        refused(partial(store.append, "c", [event]), "invalid_input", "KND-002",
                f"append of unregistered {kind!r} v{version}", store=store, touched=["c"])

    kinds = st.sampled_from([k for k, _ in registered_pairs()]) | st.text(gen.SCALAR_TEXT,
                                                                          min_size=1)
    run_property(ctx, body, kinds, st.integers(1, MAX_SAFE_INTEGER), st.booleans())


@check("KND-003")
def check_payload_schemas_enforced(ctx: CheckContext) -> None:
    """KND-003: a payload its schema rejects is refused on append and on import."""

    def body(store: LedgerStore) -> None:
        for number, ((kind, version), example) in enumerate(sorted(
                knd.EXAMPLE_PAYLOADS.items())):
            for variant, payload in enumerate(_breaking(example)):
                for ignorable in (False, True):
                    event = draft(f"b{number}-{variant}", kind=kind, payload=payload,
                                  schema_version=version, ignorable=ignorable)
                    refused(partial(store.append, "c", [event]), "invalid_input", "KND-003",
                            f"append of {kind!r} with payload {payload!r}", store=store,
                            touched=["c"])
            wire = {"schemaVersion": version, "eventId": f"i{number}", "conversationId": "i",
                    "seq": 1, "kind": kind, "occurredAt": STAMP,
                    "payload": {}}
            refused(partial(store.import_conversation, archive("i", [wire])), "invalid_input",
                    "KND-003", f"import of {kind!r} with payload {{}}", store=store,
                    touched=["i"])

    run_once(ctx, body)


@check("KND-004")
def check_unknown_ignorable_kept(ctx: CheckContext) -> None:
    """KND-004: an imported ignorable envelope of an unregistered pair is kept as received."""

    def body(store: LedgerStore, event: tuple[str, int, JsonValue], stamp: str) -> None:
        kind, version, payload = event
        wire = {"schemaVersion": version, "eventId": "kept", "conversationId": "c", "seq": 1,
                "kind": kind, "occurredAt": stamp, "payload": payload, "ignorable": True}
        data = archive("c", [wire])
        accepted(partial(store.import_conversation, data), "KND-004",
                 f"import of ignorable unregistered {kind!r} v{version}")
        if store.export_conversation("c") != data or len(ledger_bytes(store, "c")) != 1:
            fail("KND-004", f"ignorable {kind!r} v{version} was not kept as received")

    run_property(ctx, body, knd.unknown_ignorable_events(), gen.occurred_at())
