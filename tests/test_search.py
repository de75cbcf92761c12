"""Search in the SQLite store: hostile queries, fossils, bad input, default-deny."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.sqlite import SqliteStore
from convledger_conformance.search.model import expected_hits

STAMP = "2024-01-01T00:00:00Z"
FOSSILS = Path(__file__).resolve().parent / "fossils"
WORDS = ["alpha", "beta", "gamma", "near", "and", "not", "or", "body", "scope", "x9"]


def text_event(cid: str, n: int, text: str) -> EventDraft:
    """A state/set draft whose value is ``text``."""
    return EventDraft(event_id=f"{cid}-{n}", kind="state/set", occurred_at=STAMP,
                      payload={"name": "n", "version": 1, "value": text, "actor": "a"})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    """One store with three conversations of fixed texts."""
    store = SqliteStore(tmp_path_factory.mktemp("search") / "s.sqlite")
    texts = [" ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 4)) for n in range(12)]
    for cid in ("me", "you", "them"):
        store.append(cid, [text_event(cid, n, text) for n, text in enumerate(texts)])
    yield store
    store.close()


HOSTILE = st.lists(
    st.sampled_from([*'"\'*^+-():{}[],.;\\ \t\n', "NEAR", "AND", "OR", "NOT", "body:", *WORDS]),
    max_size=12,
).map("".join)


@given(query=HOSTILE)
def test_hostile_queries_are_literal(corpus: SqliteStore, query: str) -> None:
    """SRC-020, SRC-021: any text either is invalid_input or answers the hits of its words."""
    ledgers = {cid: list(corpus.read(cid).items) for cid in ("me", "you", "them")}
    try:
        hits = corpus.search("me", query, limit=100, authorize=lambda cid: cid == "you")
    except LedgerError as error:
        assert error.kind == "invalid_input"
        assert not any(ch.isalnum() for ch in query) or len(query.split()) > 32
        return
    want = expected_hits(ledgers, "me", query, 100, lambda cid: cid == "you")
    assert [(hit.conversation_id, hit.seq) for hit in hits] == want


@pytest.mark.parametrize(("query", "limit"), [
    ("", 20), ("   ", 20), ("()", 20), ('"', 20), ("x" * 1001, 20), ("w " * 33, 20),
    (None, 20), (b"alpha", 20), ("alpha", 0), ("alpha", 101), ("alpha", 2.0), ("alpha", None),
])
def test_bad_search_refused_store_unchanged(
    corpus: SqliteStore, query: object, limit: object
) -> None:
    """SRC-021 .. SRC-024: bad queries and limits are invalid_input; nothing changes."""
    before = [corpus.export_conversation(cid) for cid in ("me", "you", "them")]
    with pytest.raises(LedgerError) as caught:
        corpus.search("me", query, limit=limit)  # type: ignore[arg-type]
    assert caught.value.kind == "invalid_input"
    assert [corpus.export_conversation(cid) for cid in ("me", "you", "them")] == before


def test_default_deny_and_same_answer_for_denied_and_missing(corpus: SqliteStore) -> None:
    """SRC-010, SRC-012: no callback, a denial and a nonexistent id all answer alike."""
    alone = corpus.search("me", "alpha")
    assert {hit.conversation_id for hit in alone} == {"me"}
    assert corpus.search("me", "alpha", scope=["you"], authorize=lambda _: False) == alone
    assert corpus.search("me", "alpha", scope=["nobody"], authorize=lambda _: True) == alone


def test_migrated_fossil_baseline_is_searchable(tmp_path: Path) -> None:
    """SRC-004: the baseline event of a migrated fossil conversation is found by its words."""
    copy = tmp_path / "v1-runtime.sqlite"
    shutil.copyfile(FOSSILS / "v1-runtime.sqlite", copy)
    store = SqliteStore(copy)
    try:
        hits = store.search("conv-alpha", "Lyon trip")
        assert [(hit.conversation_id, hit.seq) for hit in hits] == [("conv-alpha", 1)]
        assert "Lyon" in hits[0].snippet
    finally:
        store.close()


def test_own_hits_first_under_a_crowd(tmp_path: Path) -> None:
    """SRC-013: a hundred foreign hits never displace the requester's one."""
    store = SqliteStore(tmp_path / "crowd.sqlite")
    for n in range(10):
        store.append(f"crowd-{n}", [text_event(f"crowd-{n}", k, "hot topic") for k in range(10)])
    store.append("me", [text_event("me", 0, "the hot topic")])
    hits = store.search("me", '"hot topic"', limit=3, authorize=lambda _: True)
    assert [(h.conversation_id, h.seq) for h in hits] == [
        ("me", 1), ("crowd-0", 10), ("crowd-0", 9)
    ]
    store.close()
