"""The lexemes the PostgreSQL store writes for an event are the clear rule's (PGS-062, PGS-063).

``search.lexemes`` is the definition: the distinct folded words of the payload's string
values (``convledger.words.folded_words`` in document order, SQL-008) and the
conversation's lexeme. The write path sends ``search.lexeme_text`` instead, one text per
event that ``INSERT_WORDS`` splits at ``words.SEPARATOR``; split so, without its empty
pieces, it must hold exactly that set for any payload: non-ASCII, astral, combining marks,
long words (the 200-byte digest), digits, keys that are words too. The last test stores
such payloads and reads each event's ``tsvector`` back (``CONVLEDGER_PG_DSN``).

``search.words_parameters`` (the events of a write cut together) gives each event's text
that set too. The hot path's other shortcuts are checked here too: ``search._all_strings``
(the string values by their exact types) against ``search._strings``, also on subclasses of
``str``, ``dict`` and ``list``; ``rows.event_columns`` against the transposed
``rows.event_row``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import json_scalars, state_set
from convledger import words
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.fast import words as fast_words
from convledger.postgres import search
from convledger.postgres.rows import key

word_characters = st.sampled_from(
    "aZ9 _-'.:\x01\x00\t\n\u00e9\u00c9\u0130\u03a3\u03c3\u0301\u0308\ufdfa\u00bd\u2044\u3000"
    "\u00a0\u0660\u1e9e\u212b\u00df\ufb01\u2166\U0001d400\U0001d7ce\U0001f600\U00020000"
)
"""ASCII letters, digits and separators, letters whose lower case or decomposition is longer
(final sigma, dotted I, the ligature whose decomposition holds spaces), combining marks,
Unicode spaces, digits of other scripts, astral letters, digits and symbols."""

texts = st.one_of(
    st.text(),
    st.text(alphabet=word_characters, max_size=120),
    st.integers(min_value=195, max_value=205).flatmap(
        lambda n: st.sampled_from(["a" * n, "B9" * (n // 2), "\u00e9" * (n // 2),
                                   "x" * n + "\u0301", "\U0001d400" * (n // 4)])),
    st.lists(st.sampled_from(["word", "Word", "WORD", "caf\u00e9", "cafe\u0301", "42", "x" * 201]),
             max_size=8).map(" ".join),
)
"""Any text, texts of the interesting characters, words about the digest limit, repeated words."""

payloads: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars | texts,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(texts, children, max_size=5),
    max_leaves=20,
)
"""Any JSON value whose strings, values and keys alike, are drawn from :data:`texts`."""


def stored_set(text: str) -> set[str]:
    """The lexemes ``INSERT_WORDS`` makes of one event's text (split, empty pieces dropped)."""
    return set(text.split(words.SEPARATOR)) - {""}


def envelope(payload: JsonValue, conversation_id: str = "c") -> Envelope:
    return Envelope.from_draft(
        EventDraft("e", "state/set", "2024-05-01T12:00:00Z", payload), conversation_id, 1)


@given(payloads, st.text(min_size=1, max_size=8))
@example({"caf\u00e9": "CAF\u00c9 cafe\u0301", "n": 1}, "c")
@example(["x" * 201, "\u00e9" * 101, "a" * 200], "\U0001f600")
@example({"text": "text", "type": ["tool_use", {"id": "toolu_01A"}]}, "c")
@example("snake_case\x01\x00 \ufdfa \u0130stanbul \u039f\u0394\u039f\u03a3", "c")
def test_lexeme_text_holds_the_lexemes(payload: JsonValue, conversation_id: str) -> None:
    """PGS-062, PGS-063: the text the write sends holds exactly the clear rule's lexemes."""
    expected = set(search.lexemes(envelope(payload, conversation_id)))
    scope = search.scope_lexeme(conversation_id)
    assert expected == words.folded_words(search._strings(payload)) | {scope}
    assert stored_set(search.lexeme_text(payload, scope)) == expected
    strings = search._all_strings(payload)
    assert stored_set(fast_words.joined_words(strings) + words.SEPARATOR + scope) == expected
    assert stored_set(words.joined_words(strings) + words.SEPARATOR + scope) == expected


@given(st.lists(st.tuples(st.sampled_from(["c", "d", "\u00e9\U0001f600"]), payloads),
                max_size=8))
@example([("c", {"caf\u00e9": "CAF\u00c9"}), ("c", ["na\u00efve\x02x", "y"]), ("d", "\x02")])
@example([("c", "x" * 201), ("c", "\u00e9 z"), ("d", ["a", "b\u2019c"])])
@example([("c", {"text": "caf\u00e9"}), ("c", 1), ("c", "\u00e9\x01\x02")])
def test_words_parameters_hold_each_events_lexemes(
    events: list[tuple[str, JsonValue]],
) -> None:
    """PGS-062: the write's parameters hold, for each event, its seq and a text holding
    exactly its ``lexemes`` (the events cut together, by the codec's ``joined_words_each``),
    one tuple per conversation in order of first appearance."""
    placed = [Envelope.from_draft(EventDraft(f"e{i}", "state/set", "2024-05-01T12:00:00Z",
                                             payload), conversation_id, i + 1)
              for i, (conversation_id, payload) in enumerate(events)]
    found = search.words_parameters(placed)
    conversations = list(dict.fromkeys(conversation_id for conversation_id, _ in events))
    assert [conversation for conversation, _, _ in found] == [
        key(conversation_id) for conversation_id in conversations]
    for (_, seqs, texts), conversation_id in zip(found, conversations, strict=True):
        own = [event for event in placed if event.conversation_id == conversation_id]
        assert seqs == [event.seq for event in own]
        assert [stored_set(text) for text in texts] == [set(search.lexemes(e)) for e in own]


def test_the_benchmark_payloads() -> None:
    """The payloads of the PostgreSQL benchmarks (ASCII text with one accented word)."""
    from convledger_bench.workloads import payload

    for index in range(50):
        made = payload(index)
        expected = set(search.lexemes(envelope(made)))
        assert stored_set(search.lexeme_text(made, search.scope_lexeme("c"))) == expected


class Text(str):
    pass


class Members(dict):  # type: ignore[type-arg]
    pass


class Items(list):  # type: ignore[type-arg]
    pass


def subclassed(value: JsonValue) -> JsonValue:
    """The same value with every string, object and array of a subclass."""
    if isinstance(value, str):
        return Text(value)
    if isinstance(value, dict):
        return Members({name: subclassed(item) for name, item in value.items()})
    if isinstance(value, list):
        return Items(subclassed(item) for item in value)
    return value


def nested(depth: int) -> JsonValue:
    """A value ``depth`` levels deep (LIM-005 allows 128), a string at every level."""
    value: JsonValue = "bottom"
    for level in range(depth - 1):
        value = [f"l{level}", value] if level % 2 else {"k": value, "s": f"o{level}"}
    return value


@given(payloads)
@example({"a": [1, 2.5, True, None, "x", {"b": "y"}], "c": ""})
@example(nested(128))
def test_all_strings_are_the_strings(payload: JsonValue) -> None:
    """SQL-008: the hot path's string values are the clear walk's, in the same order."""
    assert search._all_strings(payload) == list(search._strings(payload))
    odd = subclassed(payload)
    assert search._all_strings(odd) == list(search._strings(odd))


@given(st.lists(st.tuples(st.sampled_from(["c", "d", "é😀"]), texts,
                          st.booleans()), min_size=1, max_size=8),
       st.booleans())
def test_event_columns_are_the_rows(events: list[tuple[str, str, bool]], one: bool) -> None:
    """PGS-003: the columns of INSERT_EVENTS are the transposed rows of ``event_row``."""
    from convledger.postgres import rows

    placed = [
        Envelope.from_draft(
            EventDraft(f"e{i}{text[:3]}", text[:5] or "k", "2024-05-01T12:00:00Z",
                       {"t": text}, 1 + i % 2, ignorable),
            "c" if one else conversation_id, 10 + i)
        for i, (conversation_id, text, ignorable) in enumerate(events)
    ]
    payloads = [f"{{\"t\":{i}}}" for i in range(len(placed))]
    expected = [list(column) for column in zip(
        *(rows.event_row(event, text) for event, text in zip(placed, payloads, strict=True)),
        strict=True)]
    assert rows.event_columns(placed, payloads) == expected
    with pytest.raises(ValueError):
        rows.event_columns(placed, payloads[1:])


# -- stored: the tsvector of each event is the clear rule's set --------------------------------


@pytest.fixture(scope="module")
def store(pg_dsn: str) -> Iterator[object]:
    from convledger.postgres import schema_store_factory

    made = schema_store_factory(pg_dsn)()
    yield made
    made.close()


_conversations = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(payloads, min_size=1, max_size=6))
@example([{"caf\u00e9": "CAF\u00c9 cafe\u0301 \ufdfa x" + "y" * 300}, "\x01\x01", ""])
def test_stored_words_are_the_lexemes(store: object, values: list[JsonValue]) -> None:
    """PGS-062: the row of ``search_words`` of each event holds exactly ``lexemes``."""
    import psycopg

    from convledger.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    conversation_id = f"lexemes-{next(_conversations)}"
    drafts = [EventDraft(f"{conversation_id}-{i}", "state/set", "2024-05-01T12:00:00Z",
                         state_set(value)) for i, value in enumerate(values)]
    placed = store.append(conversation_id, drafts)
    with psycopg.connect(store.settings.dsn) as connection:
        found = dict(connection.execute(
            psycopg.sql.SQL("SELECT seq, tsvector_to_array(words) FROM {}.search_words"
                            " WHERE conversation_id = %s").format(
                psycopg.sql.Identifier(store.schema)),
            (conversation_id.encode(),),
        ).fetchall())
    assert sorted(found) == [event.seq for event in placed]
    for event in placed:
        assert sorted(found[event.seq]) == sorted(search.lexemes(event)), event.payload
