"""Checks of chapter SRC: default-deny, authorization, starvation, literal queries, limits.

They run on stores that declare ``search`` (the SQLite store); the in-memory
store declares it absent and is held to CAP-002 instead. Expected hits come
from :mod:`convledger_conformance.search.model`, folded from what the ledger
API reads.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from convledger.interface import require
from convledger.search import Hit
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.profiles import scaled
from convledger_conformance.projections.model import loose
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_reads import SCAN_CONVERSATIONS
from convledger_conformance.search.machine import build_search_machine
from convledger_conformance.search.model import expected_hits
from convledger_conformance.support import (
    STAMP,
    draft,
    fail,
    refused,
    run_once,
    run_property,
)

SRC: Final = Capability.SEARCH


def say(store: LedgerStore, cid: str, *texts: str) -> None:
    """Append one ``state/set`` per text, its value the text."""
    start = store.head(cid)
    store.append(cid, [draft(f"{cid}-{start + n}", text) for n, text in enumerate(texts, 1)])


def pairs(hits: tuple[Hit, ...]) -> list[tuple[str, int]]:
    """The (conversationId, seq) of each hit."""
    return [(hit.conversation_id, hit.seq) for hit in hits]


@check("SRC-001", "SRC-002", "SRC-003", "SRC-010", capability=SRC)
def check_search_defaults_to_own_conversation(ctx: CheckContext) -> None:
    """SRC-001 .. SRC-003, SRC-010: without a callback only own hits, newest first, full hits."""

    def body(given: LedgerStore) -> None:
        store = require(given, SRC)
        say(store, "mine", "the red fox", "a blue fox", "nothing here", "Red FOX again")
        # theirs holds the words at seqs 3 and 5: a search that forgets which conversation
        # it reads (one shared index, no scope) answers mine's seq 3, without the words
        say(store, "theirs", "plain", "words", "red fox too", "again", "red fox at five")
        hits = store.search("mine", "fox red")
        if pairs(hits) != [("mine", 4), ("mine", 1)]:
            fail(("SRC-001", "SRC-003", "SRC-010"), f"search answered {pairs(hits)}")
        first = hits[0]
        if first.occurred_at != STAMP:
            fail("SRC-001", f"a hit carries occurredAt {first.occurred_at!r}")
        if not isinstance(first.snippet, str) or "fox" not in first.snippet.lower():
            fail("SRC-002", f"a hit's snippet is {first.snippet!r}")

    run_once(ctx, body)


@check("SRC-025", "SRC-001", capability=SRC)
def check_words_match_exactly(ctx: CheckContext) -> None:
    """SRC-025: a word matches the same word only: no stem, no stop word, no member name."""

    def body(given: LedgerStore) -> None:
        store = require(given, SRC)
        say(store, "me", "runs fast", "running late", "the end", "an actor and a value")
        cases = {"runs": [1], "running": [2], "run": [], "the": [3], "and": [4],
                 "actor": [4], "value": [4], "name": [], "version": [], "fast late": []}
        for query, seqs in cases.items():
            got = pairs(store.search("me", query, limit=100))
            if got != [("me", seq) for seq in sorted(seqs, reverse=True)]:
                fail("SRC-025", f"query {query!r} answered {got}, want seqs {seqs} "
                     "(each word matches the same word of the event's text only)")

    run_once(ctx, body)


@check("SRC-004", capability=SRC)
def check_every_event_is_indexed(ctx: CheckContext) -> None:
    """SRC-004: every event of every conversation is found, whatever batch wrote it."""

    def body(given: LedgerStore) -> None:
        store = require(given, SRC)
        written = 0
        for size in (1, 7, 32, 1, 40, 3):  # across any batch or pending bound a store keeps
            for cid in ("a", "b\x00"):
                say(store, cid, *[f"common word{written + n}" for n in range(size)])
            written += size
        for cid in ("a", "b\x00"):
            for number in range(0, written, 7):
                got = pairs(store.search(cid, f"word{number}"))
                if got != [(cid, number + 1)]:
                    fail("SRC-004", f"word{number} of {cid!r} answers {got}, want seq {number + 1}")
            if len(store.search(cid, "common", limit=100)) != min(written, 100):
                fail("SRC-004", f"{cid!r}: not every one of its {written} events is found")

    run_once(ctx, body)


@check("SRC-004", "SRC-001", capability=SRC, also=(Capability.PURGE,))
def check_purged_conversations_answer_nothing(ctx: CheckContext) -> None:
    """SRC-004: a purged conversation has no hit, asked by itself, in a scope or by a grant."""

    def body(given: LedgerStore) -> None:
        store = require(given, SRC)
        say(store, "gone", "vanishing words", "vanishing again")
        say(store, "kept", "vanishing too")
        require(given, Capability.PURGE).purge("gone")
        for requester, scope in (("gone", None), ("kept", ["gone"]), ("kept", None)):
            found = pairs(store.search(requester, "vanishing", scope=scope,
                                       authorize=lambda _: True))
            if [pair for pair in found if pair[0] == "gone"]:
                fail("SRC-004", f"a purged conversation still answers {found}")
            if requester == "kept" and ("kept", 1) not in found:
                fail("SRC-001", f"the conversation beside a purged one answers {found}")

    run_once(ctx, body)


@check("SRC-011", "SRC-003", capability=SRC)
def check_search_others_only_when_authorized(ctx: CheckContext) -> None:
    """SRC-011: another conversation's hits appear only when the callback returns True."""

    def body(given: LedgerStore) -> None:
        store = require(given, SRC)
        for cid in ("b", "a", "c", "me"):
            say(store, cid, f"shared word {cid}")
        asked: list[str] = []

        def only_a_and_c(cid: str) -> bool:
            asked.append(cid)
            return cid in ("a", "c")

        hits = store.search("me", "shared", authorize=only_a_and_c)
        if pairs(hits) != [("me", 1), ("a", 1), ("c", 1)]:
            fail(("SRC-011", "SRC-003"), f"search answered {pairs(hits)}")
        if "me" in asked:
            fail("SRC-011", "the callback was asked about the requester's own conversation")

        def raising(cid: str) -> bool:
            raise PermissionError(cid)

        for what, callback in (("1", lambda _: 1), ("'yes'", lambda _: "yes"),
                               ("raising", raising)):
            got = store.search("me", "shared", authorize=loose(callback))
            if pairs(got) != [("me", 1)]:
                fail("SRC-011", f"a {what} callback let {pairs(got)} through")

    run_once(ctx, body)


@check("SRC-003", "SRC-011", "SRC-012", capability=SRC)
def check_other_conversations_in_code_point_order(ctx: CheckContext) -> None:
    """SRC-003: other conversations by code point, on ids that UTF-16 and locale orders reorder.

    ``SCAN_CONVERSATIONS`` holds U+1F600 beside U+FFFF (UTF-16 code units put the
    emoji first), U+00E9 and ``Z`` beside ``a`` and ``z`` (locales put them together)
    and control characters, so only code-point order gives the expected answer,
    with a scope in any order and without one.
    """

    def body(given: LedgerStore) -> None:
        store = require(given, SRC)
        for n, cid in enumerate(("me", *SCAN_CONVERSATIONS)):
            store.append(cid, [draft(f"order-{n}", "needle")])
        want = [("me", 1)] + [(cid, 1) for cid in sorted(
            SCAN_CONVERSATIONS, key=lambda c: c.encode("utf-8"))]
        for what, scope in (("no scope", None), ("the scope as listed", SCAN_CONVERSATIONS),
                            ("the scope reversed", SCAN_CONVERSATIONS[::-1])):
            hits = store.search("me", "needle", scope=scope, authorize=lambda _: True)
            if pairs(hits) != want:
                fail("SRC-003", f"search with {what} answered {pairs(hits)}, want {want}")

    run_once(ctx, body)


@check("SRC-012", capability=SRC)
def check_denied_conversations_are_not_revealed(ctx: CheckContext) -> None:
    """SRC-012: a denied, empty or nonexistent scope member gives the same answer."""

    def body(store: LedgerStore) -> None:
        say(store, "me", "needle one")
        say(store, "secret", "needle two", "needle three")
        say(store, "open", "needle four")
        s = require(store, SRC)

        def deny_secret(cid: str) -> bool:
            return cid != "secret"

        base = s.search("me", "needle", scope=["open"], authorize=deny_secret)
        for extra in ("secret", "never-existed", "me"):
            got = s.search("me", "needle", scope=["open", extra], authorize=deny_secret)
            if got != base:
                fail("SRC-012", f"adding {extra!r} to the scope changed the answer")
        if pairs(base) != [("me", 1), ("open", 1)]:
            fail("SRC-012", f"a scoped search answered {pairs(base)}")
        only = s.search("me", "needle", scope=["secret"], authorize=lambda _: True)
        if pairs(only) != [("me", 1), ("secret", 2), ("secret", 1)]:
            fail("SRC-012", f"an authorized scope answered {pairs(only)}")
        for bad in ("open", [""], ["x"] * 101, [3]):
            refused(partial(s.search, "me", "needle", scope=loose(bad)), "invalid_input",
                    "SRC-012", f"scope {str(bad)[:20]!r}")

    run_once(ctx, body)


@check("SRC-013", capability=SRC)
def check_own_hits_never_starved(ctx: CheckContext) -> None:
    """SRC-013: 80 foreign hits never push out the requester's own (prior-art bug 10)."""

    def body(store: LedgerStore) -> None:
        for n in range(8):
            say(store, f"crowd-{n}", *["popular topic"] * 10)
        say(store, "me", "popular topic", "unrelated", "the popular topic again", "topic")
        s = require(store, SRC)
        for limit, own in ((5, 2), (2, 2), (1, 1)):
            got = pairs(s.search("me", "popular topic", limit=limit, authorize=lambda _: True))
            if got[:own] != [("me", 3), ("me", 1)][:own] or len(got) != limit:
                fail("SRC-013", f"limit {limit} answered {got}")
            if any(cid == "me" for cid, _ in got[own:]):
                fail("SRC-013", f"own hits are not all first: {got}")

    run_once(ctx, body)


_HOSTILE = st.sampled_from([
    '"', '""', "'", "*", "^", "+", "-", "(", ")", ":", "body:", "scope:", "NEAR(", "NEAR",
    "AND", "OR", "NOT", "{body}", "}", "[", "]", ",", "\\", "'\"", "*)", "\x00", "\n",
])
_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "near", "and", "or", "not", "x1"])


@check("SRC-020", "SRC-001", capability=SRC)
def check_queries_are_literal(ctx: CheckContext) -> None:
    """SRC-020: quotes, NEAR, column filters, *, parentheses in a query are only separators."""

    def body(given: LedgerStore, texts: list[list[str]], query: list[str]) -> None:
        store = require(given, SRC)
        say(store, "me", *[" ".join(text) or "empty" for text in texts])
        if not any(word.isalnum() for word in query):
            query = [*query, "alpha"]
        text = "".join(query)
        got = pairs(store.search("me", text, limit=100))
        want = expected_hits({"me": list(read_whole(store, "me"))}, "me", text, 100,
                             lambda _: False)
        if got != want:
            fail("SRC-020", f"query {text!r} answered {got}, the words alone give {want}")

    texts = st.lists(st.lists(_WORDS, max_size=4), min_size=1, max_size=6)
    query = st.lists(_HOSTILE | _WORDS, min_size=1, max_size=8)
    run_property(ctx, body, texts, query, share=0.3)


@check("SRC-021", "SRC-022", "SRC-023", "SRC-024", capability=SRC)
def check_bad_queries_and_limits_refused(ctx: CheckContext) -> None:
    """SRC-021 .. SRC-024: empty, symbol-only, too long, bad limits: invalid_input, no callback."""

    def body(store: LedgerStore) -> None:
        say(store, "me", "word")
        say(store, "other", "word")
        asked: list[str] = []

        def spy(cid: str) -> bool:
            asked.append(cid)
            return True

        s = require(store, SRC)
        cases: list[tuple[str, object, object]] = [
            ("SRC-021", "", 20), ("SRC-021", "   ", 20), ("SRC-021", '"*() :^+-', 20),
            ("SRC-021", "_", 20), ("SRC-022", "a" * 1001, 20),
            ("SRC-022", " ".join(["w"] * 33), 20), ("SRC-022", 7, 20), ("SRC-022", None, 20),
            ("SRC-022", "word\ud800", 20), ("SRC-023", "word", 0), ("SRC-023", "word", 101),
            ("SRC-023", "word", True), ("SRC-023", "word", "5"),
        ]
        for requirement, query, limit in cases:
            refused(partial(s.search, "me", loose(query), limit=loose(limit), authorize=spy),
                    "invalid_input", requirement, f"query {str(query)[:20]!r} limit {limit!r}",
                    store=store, touched=["me", "other"], unchanged="SRC-024")
        refused(partial(s.search, "", "word"), "invalid_input", "SRC-023", "an empty requester")
        refused(partial(s.search, "me", "word", authorize=loose(3)), "invalid_input",
                "SRC-023", "a callback that is not callable")
        if asked:
            fail("SRC-024", "a refused search called the callback")
        if len(s.search("me", "word", limit=100, authorize=spy)) != 2:
            fail("SRC-023", "limit 100 is refused or cuts two hits")

    run_once(ctx, body)


@check("SRC-001", "SRC-003", "SRC-010", "SRC-011", "SRC-013", "SRC-025", capability=SRC)
def check_search_machine(ctx: CheckContext) -> None:
    """SRC-001, SRC-003, SRC-025, SRC-010, SRC-011, SRC-013: every hit holds the word, and random
    callbacks over many conversations leak nothing."""
    machine = build_search_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=scaled(ctx.profile, share=0.5))
