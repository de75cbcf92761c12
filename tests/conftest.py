"""Shared test setup: Hypothesis profiles, the ``slow`` marker, strategies, store state.

Hypothesis profiles (choose with ``--hypothesis-profile=NAME``):

=========  =====================================================================
fast       the default: derandomized (the same examples every run), small budget
thorough   random search with a large budget, for hunting bugs before a release
=========  =====================================================================

Both use ``database=None`` (no stale failures replayed from ``.hypothesis/``)
and ``deadline=None`` (timing is not what these tests judge).

Derandomized is not order-independent: Hypothesis mixes the constants of every
loaded local module (``tests/`` excepted) into its draws, so a test's examples
change with the modules earlier tests imported. A test must not depend on a
particular draw reaching a rule or a value; drive that case explicitly.

Tests marked ``slow`` run only when ``-m`` selects them (``pytest -m slow``); so do
those marked ``pg_faults`` (``pytest -m pg_faults``: a throwaway PostgreSQL cluster,
crashed under writers, ``scripts/pg_faults.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from convledger import canonical
from convledger.canonical import MAX_SAFE_INTEGER, JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore

if TYPE_CHECKING:
    from convledger_conformance.report import Report

settings.register_profile(
    "fast",
    max_examples=40,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``slow`` and ``pg_faults`` tests unless a ``-m`` expression was given."""
    if config.getoption("markexpr", default=""):
        return
    for marker in ("slow", "pg_faults"):
        skip = pytest.mark.skip(reason=f"{marker}: run with -m {marker}")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


# -- JSON values -------------------------------------------------------------

safe_integers = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
# Hypothesis' text() never yields surrogates; it does yield controls, NUL and astral characters.
any_text = st.text()
json_scalars = st.none() | st.booleans() | safe_integers | finite_floats | any_text
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(any_text, children, max_size=4),
    max_leaves=12,
)
"""Any value of the CAN data model, with astral keys, controls, -0.0 and safe integers."""

identifiers = st.text(min_size=1, max_size=12)
"""eventId / conversationId / kind values: any non-empty string of scalar values (ENV-004)."""


@st.composite
def occurred_ats(draw: st.DrawFn) -> str:
    """RFC 3339 date-times with an offset, in every layout ENV-008 allows."""
    moment = draw(st.datetimes())
    separator = draw(st.sampled_from("Tt"))
    fraction = draw(st.sampled_from(["", ".5", ".123", ".000001", ".123456789"]))
    hours = draw(st.integers(0, 23))
    minutes = draw(st.integers(0, 59))
    offset = draw(
        st.sampled_from(["Z", "z"])
        | st.sampled_from("+-").map(lambda sign: f"{sign}{hours:02d}:{minutes:02d}")
    )
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}{separator}"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{fraction}{offset}"
    )


def state_set(value: JsonValue, *, version: int = 1) -> dict[str, JsonValue]:
    """A valid ``state/set`` v1 payload carrying ``value``."""
    return {"actor": "tester", "name": "slot", "value": value, "version": version}


def draft(
    event_id: str,
    *,
    value: JsonValue = 0,
    kind: str = "state/set",
    payload: JsonValue | None = None,
    schema_version: int = 1,
    ignorable: bool = False,
    occurred_at: str = "2024-05-01T12:00:00Z",
) -> EventDraft:
    """A draft of a registered kind (``state/set`` v1) unless told otherwise."""
    return EventDraft(
        event_id=event_id,
        kind=kind,
        occurred_at=occurred_at,
        payload=state_set(value) if payload is None else payload,
        schema_version=schema_version,
        ignorable=ignorable,
    )


@st.composite
def drafts(draw: st.DrawFn) -> EventDraft:
    """Valid drafts of ``state/set`` v1 with any value, any eventId and any date-time."""
    return EventDraft(
        event_id=draw(identifiers),
        kind="state/set",
        occurred_at=draw(occurred_ats()),
        payload=state_set(draw(json_values), version=draw(st.integers(1, MAX_SAFE_INTEGER))),
        ignorable=draw(st.booleans()),
    )


def draft_batches(*, max_size: int = 5) -> st.SearchStrategy[list[EventDraft]]:
    """Batches of valid drafts with distinct eventIds."""
    return st.lists(drafts(), min_size=1, max_size=max_size, unique_by=lambda d: d.event_id)


# -- stores ------------------------------------------------------------------


def memory_state(store: MemoryStore) -> tuple[dict[str, list[bytes]], list[str]]:
    """Everything a memory store holds: each ledger's canonical bytes, and every eventId.

    Tests compare it before and after a refused call (ERR-004, LED-004, ARC-013).
    """
    ledgers = {
        conversation_id: [envelope.canonical_bytes() for envelope in ledger]
        for conversation_id, ledger in store._ledgers.items()
    }
    return ledgers, sorted(store._event_ids)


def wire_events(envelopes: Sequence[Envelope]) -> list[bytes]:
    """The canonical bytes of each envelope, for comparing envelopes exactly."""
    return [envelope.canonical_bytes() for envelope in envelopes]


def archive_bytes(
    events: list[dict[str, JsonValue]],
    /,
    *,
    conversation_id: str = "conv",
    **members: JsonValue,
) -> bytes:
    """The canonical bytes of an archive document with these events (and member overrides)."""
    document: dict[str, JsonValue] = {
        "format": "convledger.archive",
        "formatVersion": 1,
        "conversationId": conversation_id,
        "events": list(events),
        "companions": {},
    }
    document.update(members)
    return canonical.encode(document)


def wire_event(
    seq: int,
    *,
    event_id: str | None = None,
    conversation_id: str = "conv",
    kind: str = "state/set",
    payload: JsonValue | None = None,
    **members: JsonValue,
) -> dict[str, JsonValue]:
    """One envelope as a wire object, valid unless members say otherwise."""
    wire: dict[str, JsonValue] = {
        "schemaVersion": 1,
        "eventId": f"e{seq}" if event_id is None else event_id,
        "conversationId": conversation_id,
        "seq": seq,
        "kind": kind,
        "occurredAt": "2024-05-01T12:00:00.250+02:00",
        "payload": state_set(seq) if payload is None else payload,
    }
    wire.update(members)
    return wire



@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """The DSN of ``CONVLEDGER_PG_DSN`` (tests of chapter PGS), checked reachable.

    Unreachable: a failure when ``CI`` is ``true`` (CI must never skip them), else a skip.
    """
    import os

    psycopg = pytest.importorskip("psycopg", reason="CONVLEDGER_PG_DSN tests need psycopg")
    from convledger.postgres import configured_dsn

    dsn = configured_dsn()
    try:
        psycopg.connect(dsn, connect_timeout=3).close()
    except psycopg.Error as error:
        message = f"PostgreSQL at CONVLEDGER_PG_DSN={dsn!r} is unreachable: {error}".splitlines()
        if os.environ.get("CI") == "true":
            pytest.fail(message[0])
        pytest.skip(message[0])
    return dsn


@pytest.fixture(scope="session")
def memory_smoke_report() -> Report:
    """The whole suite at smoke, derandomized, against MemoryStore: run once per process.

    Several tests judge this same run (each asked for it anew before issue 34); a Report
    is a frozen value, so they share it.
    """
    from convledger_conformance.runner import run_suite

    return run_suite(MemoryStore, profile="smoke", derandomize=True)
