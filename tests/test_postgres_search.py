"""Search, recycled fresh stores, serve-wire and the tools on PostgreSQL (PGS-053 .. PGS-066).

Search: the words are the reference's, not the server's parser's (PGS-063),
queries reach the server as quoted lexemes only (PGS-066, SRC-020), a purge
takes the words with the events (PGS-062). Fresh stores: a closed store's
schema is emptied, renamed and reused only when no connection is left on it
(PGS-053). ``serve-wire --store postgres`` gives each ``newStore`` its own
empty schema and leaves none behind (PGS-054); ``inspect``, ``export`` and
``import`` take a DSN (PGS-055).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import unicodedata
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import draft
from convledger.cli import main
from convledger.errors import LedgerError
from convledger.handles import open_located

psycopg = pytest.importorskip("psycopg")

from convledger.postgres import (  # noqa: E402
    PostgresStore,
    drop_schema,
    factories,
    recycling,
    schema_store_factory,
)
from convledger.postgres import search as search_words  # noqa: E402
from convledger.postgres.driver import application_name  # noqa: E402
from convledger_conformance.wire.client import WireStoreFactory  # noqa: E402

ALL = {"authorize": lambda cid: True}


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    made = schema_store_factory(pg_dsn)()
    yield made
    made.close()


def seqs(hits: list[object]) -> list[tuple[str, int]]:
    return [(hit.conversation_id, hit.seq) for hit in hits]  # type: ignore[attr-defined]


def test_queries_are_literal_lexemes(store: PostgresStore) -> None:
    """SRC-020, PGS-066: tsquery operators in the user's text only separate words."""
    store.append("c", [draft("e1", value="alpha beta"), draft("e2", value="alpha gamma"),
                       draft("e3", value="it's a:b (x|y) !not <-> prefix:*")])
    for query in ["alpha & !beta", "alpha | beta", "'alpha' beta", "alpha <-> beta",
                  "beta:*", "(alpha) \\beta"]:
        assert seqs(store.search("c", query)) == [("c", 1)], query
    assert seqs(store.search("c", "ALPHA")) == [("c", 2), ("c", 1)]
    assert seqs(store.search("c", "not prefix x y it s")) == [("c", 3)]
    assert not store.search("c", "alp")  # whole words only, no prefix match


def test_words_fold_case_and_marks_and_long_words_match(store: PostgresStore) -> None:
    """PGS-063: lower case without combining marks; a 300-byte word by its digest."""
    long_word = "w" * 300
    store.append("c", [draft("e1", value=f"Café {long_word} naïve"), draft("e2", value="x")])
    assert seqs(store.search("c", "cafe NAIVE")) == [("c", 1)]
    assert seqs(store.search("c", long_word.upper())) == [("c", 1)]
    assert not store.search("c", "w" * 299)
    hit = store.search("c", "cafe")[0]
    assert "Café" in hit.snippet and hit.occurred_at == "2024-05-01T12:00:00Z"


def test_letters_and_digits_are_categories_l_and_n(store: PostgresStore) -> None:
    """PGS-068: L* and N* characters make words (No and Nl too); ``_`` and symbols separate."""
    store.append("c", [draft("e1", value="snake_case x\u00bdy \u2166th 3\u20ac4 \u0660\u0661"),
                       draft("e2", value="other")])
    for query in ["snake", "case", "x\u00bdy", "\u2166th", "3", "4", "\u0660\u0661"]:
        assert seqs(store.search("c", query)) == [("c", 1)], query
    assert seqs(store.search("c", "case_snake")) == [("c", 1)]  # _ separates, as in the text
    assert not store.search("c", "x")  # "x½y" is one word (½ is category No), "x" is not in it


def _folded_by_the_rule(word: str) -> str:
    """PGS-063 as the chapter words it, with no fast path."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)) or word.lower()
    if len(folded.encode("utf-8")) > 200:
        return "h:" + hashlib.sha256(folded.encode("utf-8")).hexdigest()
    return folded


def _string_values(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _string_values(item)]
    if isinstance(value, list):
        return [text for item in value for text in _string_values(item)]
    return []


def test_a_batch_stores_each_events_words_in_one_statement(store: PostgresStore) -> None:
    """PGS-062, PGS-063: one batch, words shared between events, ASCII and not, long and short."""
    texts = ["Alpha beta ALPHA", "beta Ĉapo \ufdfa ﬁne", "x" * 201 + " alpha", "Ǆemal 42 beta"]
    drafts = [draft(f"e{i}", value=text) for i, text in enumerate(texts)]
    store.append("c", drafts)
    with psycopg.connect(store.settings.dsn) as connection:
        found = dict(connection.execute(
            psycopg.sql.SQL("SELECT seq, tsvector_to_array(words) FROM {}.search_words"
                            " ORDER BY seq").format(psycopg.sql.Identifier(store.schema))
        ).fetchall())
    scope = search_words.scope_lexeme("c")
    for seq, (made, text) in enumerate(zip(drafts, texts, strict=True), start=1):
        strings = " ".join(_string_values(made.payload))
        assert text in strings
        expected = {_folded_by_the_rule(word) for word in re.findall(r"[^\W_]+", strings)}
        assert sorted(found[seq]) == sorted(expected | {scope}), text
    assert seqs(store.search("c", "beta")) == [("c", 4), ("c", 2), ("c", 1)]
    assert seqs(store.search("c", "capo fine")) == [("c", 2)]


def test_conversations_are_apart_and_purge_takes_the_words(store: PostgresStore) -> None:
    """SRC-010, SRC-003, SRC-004, PGS-062, PGS-065: own first, others in byte order, purge."""
    for cid in ["b\x00", "a", "b", "me"]:
        store.append(cid, [draft(f"{cid}-1", value="needle")])
    assert seqs(store.search("me", "needle")) == [("me", 1)]
    assert [cid for cid, _ in seqs(store.search("me", "needle", **ALL))] == [
        "me", "a", "b", "b\x00"]
    assert store.purge("a")
    assert [cid for cid, _ in seqs(store.search("me", "needle", **ALL))] == ["me", "b", "b\x00"]
    with psycopg.connect(store.settings.dsn, autocommit=True) as connection:
        left = connection.execute(psycopg.sql.SQL("SELECT count(*) FROM {}.search_words"
                                                  " WHERE conversation_id = %s").format(
            psycopg.sql.Identifier(store.schema)), (b"a",)).fetchone()
    assert left == (0,)


def _schemas(dsn: str, prefix: str = factories.SCHEMA_PREFIX) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        found = connection.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                   (prefix + "%",))
        return {str(row[0]) for row in found}


def test_a_recycled_schema_is_empty_and_unreachable_from_the_old_store(pg_dsn: str) -> None:
    """PGS-053: emptied and renamed; the old locator is not_found; a held schema is dropped."""
    make = recycling.recycling_store_factory(pg_dsn)
    first = make()
    first.append("c", [draft("e1", value="word")])
    first.put_spill("c", b"x", media_type="text/plain",
                    operation={"operationId": "o", "authorization": {}}, reference="r",
                    event_id="s1", occurred_at="2024-05-01T12:00:00Z")
    old_schema, old_locator = first.schema, first.locator()
    first.close()
    recycling.settle()  # the worker empties and renames it behind the caller's back
    second = make()
    try:
        assert second.outcome == "emptied" and second.schema != old_schema
        assert second.head("c") == 0 and not second.search("c", "word")
        second.append("c", [draft("e1")])  # the eventId is free again
        with pytest.raises(LedgerError) as caught:
            open_located(old_locator)
        assert caught.value.kind == "not_found"
        held = second.open_handle()  # a connection left on the schema: never reused
        with psycopg.connect(pg_dsn, autocommit=True) as connection:
            count = connection.execute(recycling.OTHER_CONNECTIONS,
                                       (application_name(second.schema),)).fetchone()
        assert count == (2,)
        schema = second.schema
    finally:
        second.close()
    recycling.settle()
    assert schema not in _schemas(pg_dsn)
    held.close()


def test_serve_wire_gives_each_store_its_own_schema(pg_dsn: str) -> None:
    """PGS-054: newStore is empty and isolated; the server leaves no schema behind."""
    prefix = f"convledger_wire_{uuid.uuid4().hex[:8]}_"  # apart from runs beside this one
    factory = WireStoreFactory(["env", f"{factories.PREFIX_VARIABLE}={prefix}", sys.executable,
                                "-m", "convledger", "serve-wire", "--store", "postgres",
                                "--dsn", pg_dsn])
    try:
        one, two = factory(), factory()
        one.append("c", [draft("e1", value="hello")])
        assert two.head("c") == 0 and one.head("c") == 1
        assert "multi_process" not in {str(c) for c in one.capabilities}
        two.append("c", [draft("e1")])  # eventIds are per store
        assert [hit.seq for hit in one.search("c", "hello")] == [1]
        one.close()
        two.close()
    finally:
        factory.close()
    assert _schemas(pg_dsn, prefix) == set()


def test_inspect_export_import_take_a_dsn(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PGS-055: export of a schema, import into a new one, inspect; a missing schema is refused."""
    source, target = (f"convledger_cli_{uuid.uuid4().hex}" for _ in range(2))
    def run_cli(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    try:
        store = PostgresStore(pg_dsn, schema=source)
        store.append("c\x00", [draft("e1", value="hi"), draft("e2")])
        store.close()
        archive = tmp_path / "c.json"
        done = run_cli("export", pg_dsn, '"c\\u0000"', "--json-id", "--schema", source,
                       "-o", str(archive))
        assert done[0] == 0, done
        assert run_cli("import", pg_dsn, str(archive), "--schema", target)[0] == 0
        facts = json.loads(run_cli("inspect", pg_dsn, "--schema", target, "--json")[1])
        assert facts["schemaVersion"] == 2 and facts["problems"] == []
        assert facts["latestVersion"] == 2  # PostgreSQL's (PGS-002), not SQLite's
        text = run_cli("inspect", pg_dsn, "--schema", target)[1]
        # regression: the text said "migrates to 4", SQLite's latest version
        assert "schema version: 2 (current)" in text.splitlines(), text
        assert facts["conversations"] == [{"conversationId": "c\x00", "events": 2, "headSeq": 2}]
        missing = f"convledger_cli_{uuid.uuid4().hex}"
        refused = run_cli("export", pg_dsn, "c", "--schema", missing)
        assert refused[0] == 2 and "not_found" in refused[2]
        assert run_cli("inspect", pg_dsn, "--schema", missing)[0] == 2
        assert missing not in _schemas(pg_dsn, "convledger_cli_")
    finally:
        drop_schema(pg_dsn, source)
        drop_schema(pg_dsn, target)
