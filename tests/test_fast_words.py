"""The fast word cutter gives the set of folded words the clear rule gives (PGS-063, PGS-068).

``convledger.words.folded_words`` is the definition (the regular expression
``[^\\W_]+`` and ``fold``); ``convledger.fast.words.folded_words`` must return the
same set for every sequence of texts: arbitrary Unicode, ASCII with every
separator, words around the 200-byte digest limit, and every code point alone
and between ASCII letters.
"""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from convledger import codec, words
from convledger.fast import words as fast_words

unicode_texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)
"""Any text a payload may hold (no lone surrogates, LIM-011)."""
ascii_texts = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=300)
mixed_texts = st.text(
    alphabet=st.sampled_from("aZ9_ -'.\u00e9\u00c9\u0130\u03a3\u03c3\u0301\ufdfa\u00bd\u2044\u3000"
                             "\u0660\u1e9e\u212b\u00df\ufb01"),
    max_size=300,
)
"""Letters, digits and separators on both sides of ASCII, and the characters whose lower case
or decomposition is more than one character (final sigma, dotted I, the Arabic ligature with
spaces in its decomposition, fractions, ligatures)."""
long_words = st.integers(min_value=190, max_value=210).flatmap(
    lambda n: st.sampled_from(["a" * n, "\u00e9" * (n // 2), "A" * n + "\u00e9"])
)


@given(st.lists(st.one_of(unicode_texts, ascii_texts, mixed_texts, long_words), max_size=6))
@example(["caf\u00e9 CAF\u00c9 cafe\u0301"])
@example(["\u0130stanbul \u039f\u0394\u039f\u03a3'\u0392"])
@example(["a" * 200, "a" * 201, "\u00e9" * 100, "\u00e9" * 101])
@example(["snake_case", "x\x00y", "\ufdfa"])
def test_fast_equals_clear(texts: list[str]) -> None:
    """PGS-063: the same distinct folded words, whatever the texts."""
    assert fast_words.folded_words(texts) == words.folded_words(texts)


def test_every_code_point_between_letters() -> None:
    """PGS-068: each assigned code point cuts and folds alike inside an ASCII word.

    Unassigned and private-use code points (categories Cn, Co: separators to both) are
    taken one in 97; surrogates are no text (LIM-011).
    """
    points = [
        p for p in range(sys.maxunicode + 1)
        if not 0xD800 <= p <= 0xDFFF
        and (unicodedata.category(chr(p)) not in ("Cn", "Co") or p % 97 == 0)
    ]
    for start in range(0, len(points), 4096):
        chunk = [f"A{chr(point)}b" for point in points[start:start + 4096]]
        assert fast_words.folded_words(chunk) == words.folded_words(chunk), hex(points[start])


def test_letters_and_digits_are_exactly_isalnum() -> None:
    """PGS-068: a character belongs to a word exactly when ``str.isalnum`` holds for it."""
    for point in range(sys.maxunicode + 1):
        character = chr(point)
        assert (words.WORD.fullmatch(character) is not None) == character.isalnum(), hex(point)


def test_isalnum_is_the_categories_of_the_spec() -> None:
    """PGS-068: isalnum holds for general categories L* and N* and for nothing else."""
    for point in range(sys.maxunicode + 1):
        character = chr(point)
        category = unicodedata.category(character)
        expected = category[0] in ("L", "N")
        assert character.isalnum() == expected, (hex(point), category)


def test_the_seam_binds_the_chosen_cutter() -> None:
    """The store's hot path cuts by the implementation ``convledger.codec`` chose."""
    chosen = fast_words.folded_words if codec.CHOSEN == "fast" else words.folded_words
    assert codec.folded_words is chosen


def test_no_white_space_is_a_letter_or_digit() -> None:
    """The fast cutter splits at ``str.isspace``: every such character separates words."""
    assert not [hex(p) for p in range(sys.maxunicode + 1)
                if chr(p).isspace() and chr(p).isalnum()]


# -- joined words: the same set as one text (PGS-062) -------------------------------------------


def pieces(joined: str) -> set[str]:
    """The words a joined text holds, as the store's INSERT_WORDS splits it."""
    return set(joined.split(words.SEPARATOR)) - {""}


word_texts = st.lists(st.one_of(unicode_texts, ascii_texts, mixed_texts, long_words), max_size=6)


@given(word_texts)
@example(["caf\u00e9 CAF\u00c9 cafe\u0301"])
@example(["\u0130stanbul \u039f\u0394\u039f\u03a3'\u0392"])
@example(["a" * 200, "a" * 201, "\u00e9" * 100, "\u00e9" * 101])
@example(["x" * 201 + "\u00e9", "\u00e9" + "y" * 300 + " z"])
@example(["snake_case", "x\x00y", "\x01a\x01\x01b\x01", "\ufdfa"])
@example(["\u00e9a\u00e9 b \u00e9", "A\u3000B c\u00a0d \U0001d400\U0001d7ce 2\u0301"])
@example([])
@example(["", " ", "\u2014"])
def test_fast_joined_equals_clear(texts: list[str]) -> None:
    """PGS-062, PGS-063: split at SEPARATOR, both joined texts hold the clear rule's set."""
    expected = words.folded_words(texts)
    assert pieces(fast_words.joined_words(texts)) == expected
    assert pieces(words.joined_words(texts)) == expected
    assert pieces(codec.joined_words(iter(texts))) == expected  # an iterator, read once


def test_joined_every_code_point_between_letters() -> None:
    """PGS-068: each code point cuts and folds alike in the joined text, inside a word and
    beside long ASCII words (the digest detour)."""
    points = [
        p for p in range(sys.maxunicode + 1)
        if not 0xD800 <= p <= 0xDFFF
        and (unicodedata.category(chr(p)) not in ("Cn", "Co") or p % 97 == 0)
    ]
    for start in range(0, len(points), 4096):
        chunk = [f"A{chr(point)}b" for point in points[start:start + 4096]]
        assert pieces(fast_words.joined_words(chunk)) == words.folded_words(chunk), hex(start)
        one = ["Q" * 201 + " " + " ".join(chunk[:64])]
        assert pieces(fast_words.joined_words(one)) == words.folded_words(one), hex(start)


def test_no_folded_word_holds_the_separator() -> None:
    """PGS-062: SEPARATOR is in no lexeme: not in the lower case, nor in the compatibility
    decomposition of the lower case, of any letter or digit (a folded word's characters are
    among those: NFKD decomposes character by character and only reorders marks), nor in a
    digest or conversation lexeme (ASCII letters, digits and ``:``)."""
    marks = (words.SEPARATOR, fast_words.BOUNDARY)  # and the fast cutter's event boundary
    assert all(not mark.isalnum() and mark.isascii() for mark in marks)
    for point in range(sys.maxunicode + 1):
        character = chr(point)
        if not character.isalnum():
            continue
        for lowered in {character.lower(), character.upper().lower(), "\u03c2"}:
            decomposed = unicodedata.normalize("NFKD", lowered)
            for mark in marks:
                assert mark not in decomposed, hex(point)
                assert mark not in lowered, hex(point)
    assert not any(mark in words.fold("x" * 300) for mark in marks)


def test_the_seam_binds_the_chosen_joiner() -> None:
    """The store's write path joins words by the implementation ``convledger.codec`` chose."""
    chosen = fast_words.joined_words if codec.CHOSEN == "fast" else words.joined_words
    assert codec.joined_words is chosen


# -- the remembered odd pieces: the same set whether a piece is remembered or not ---------------


@given(word_texts, word_texts)
@example(["caf\u00e9 na\u00efve"], ["CAF\u00c9 stra\u00dfe caf\u00e9"])
@example(["\u03a3\u03a3 \u0130x"], ["\u03a3\u03a3 \u0130x \u00e9" * 50])
def test_remembered_pieces_equal_clear(first: list[str], second: list[str]) -> None:
    """PGS-063: a piece holding a non-ASCII byte folds alike the first time (cut by the clear
    rule, then remembered) and again (looked up), whatever was cut in between; and alike
    after the memory was emptied."""
    for texts in (first, second, first, second):
        assert pieces(fast_words.joined_words(texts)) == words.folded_words(texts)
    fast_words._ODD_PIECES.clear()
    assert pieces(fast_words.joined_words(second)) == words.folded_words(second)


def test_remembered_pieces_are_bounded() -> None:
    """The memory of odd pieces never holds more than ODD_PIECES pieces (then it is emptied
    and fills again); each distinct piece is one entry."""
    fast_words._ODD_PIECES.clear()
    many = [f"caf\u00e9{n}" for n in range(fast_words.ODD_PIECES + 10)]
    for start in range(0, len(many), 100):
        chunk = many[start:start + 100]
        assert pieces(fast_words.joined_words(chunk)) == words.folded_words(chunk)
        assert len(fast_words._ODD_PIECES) <= fast_words.ODD_PIECES
    assert 0 < len(fast_words._ODD_PIECES) <= fast_words.ODD_PIECES
    fast_words.joined_words(["caf\u00e9 caf\u00e9 CAF\u00c9"])
    assert fast_words._ODD_PIECES.get("caf\u00e9".encode()) == (words.fold("caf\u00e9"),)


# -- the events of a write at once: each event's text holds its own words (PGS-062) -------------

boundary_texts = st.text(alphabet=st.sampled_from("aZ9 _\x01\x02\u00e9\u00c9\u2019\u0301"),
                         max_size=40)
"""Texts holding the fast cutter's event boundary and separator, beside ASCII and non-ASCII."""
each_texts = st.lists(
    st.lists(st.one_of(unicode_texts, ascii_texts, mixed_texts, long_words, boundary_texts),
             max_size=4),
    max_size=8,
)


def each_expected(texts_each: list[list[str]]) -> list[set[str]]:
    return [words.folded_words(texts) for texts in texts_each]


@given(each_texts)
@example([])
@example([[], [""], [" "]])
@example([["caf\u00e9 CAF\u00c9"], ["na\u00efve"], ["caf\u00e9"], ["x"]])
@example([["a\x02b", "\u00e9"], ["c"]])
@example([["\u00e9\x02b"], ["c\u00e9"]])
@example([["\u00e9"], ["x" * 201], ["\u00e9y"]])
@example([["x" * 200], ["y" * 200 + "\u00e9"], ["z" * 150, "w" * 150]])
@example([["end\u00e9"], ["\u00e9start"], ["\x01\u00e9\x01"]])
def test_fast_joined_each_equals_clear(texts_each: list[list[str]]) -> None:
    """PGS-062, PGS-063: one text per event, in order, each holding exactly that event's
    words by the clear rule (no word leaks into a neighbour), whatever the texts, cut in one
    pass or in chunks."""
    expected = each_expected(texts_each)
    assert [pieces(text) for text in fast_words.joined_words_each(texts_each)] == expected
    assert [pieces(text) for text in words.joined_words_each(texts_each)] == expected
    assert [pieces(text) for text in codec.joined_words_each(texts_each)] == expected
    chunk = fast_words.EACH_CHUNK
    try:  # the write cut in chunks of a few characters: an event alone or a few together
        for fast_words.EACH_CHUNK in (0, 1, 7, 60):
            found = fast_words.joined_words_each(texts_each)
            assert [pieces(text) for text in found] == expected
    finally:
        fast_words.EACH_CHUNK = chunk


@given(each_texts, each_texts)
def test_remembered_odd_bytes_equal_clear(first: list[list[str]], second: list[list[str]]) -> None:
    """PGS-063: an odd piece replaced by remembered bytes gives the clear rule's words, the
    first time, again, and after the memory was emptied."""
    for texts_each in (first, second, first):
        found = fast_words.joined_words_each(texts_each)
        assert [pieces(text) for text in found] == each_expected(texts_each)
    fast_words._ODD_BYTES.clear()
    found = fast_words.joined_words_each(second)
    assert [pieces(text) for text in found] == each_expected(second)


def test_joined_each_every_code_point() -> None:
    """PGS-068: each code point, one event each, cuts and folds alike in its own event's text,
    between ASCII letters, and beside a long word (the detour to :func:`joined_words`)."""
    points = [
        p for p in range(sys.maxunicode + 1)
        if not 0xD800 <= p <= 0xDFFF
        and (unicodedata.category(chr(p)) not in ("Cn", "Co") or p % 97 == 0)
    ]
    for start in range(0, len(points), 4096):
        events = [[f"A{chr(point)}b", chr(point)] for point in points[start:start + 4096]]
        found = fast_words.joined_words_each(events)
        assert [pieces(text) for text in found] == each_expected(events), hex(points[start])
        events[0].append("Q" * 201)
        found = fast_words.joined_words_each(events[:64])
        assert [pieces(text) for text in found] == each_expected(events[:64]), hex(start)


def test_remembered_odd_bytes_are_bounded() -> None:
    """The memory of replaced pieces never holds more than ODD_PIECES entries."""
    fast_words._ODD_BYTES.clear()
    many = [[f"caf\u00e9{n}"] for n in range(fast_words.ODD_PIECES + 10)]
    for start in range(0, len(many), 100):
        chunk = many[start:start + 100]
        assert [pieces(text) for text in fast_words.joined_words_each(chunk)] == \
            each_expected(chunk)
        assert len(fast_words._ODD_BYTES) <= fast_words.ODD_PIECES
    assert 0 < len(fast_words._ODD_BYTES) <= fast_words.ODD_PIECES


def test_the_seam_binds_the_chosen_joiner_of_events() -> None:
    """The store's write path cuts the events of a write by the implementation chosen."""
    chosen = (fast_words.joined_words_each if codec.CHOSEN == "fast"
              else words.joined_words_each)
    assert codec.joined_words_each is chosen


def test_a_large_write_is_cut_in_chunks() -> None:
    """A write of more than EACH_CHUNK characters is cut a chunk at a time, each event whole:
    large events alone, small ones together, every text still its event's words."""
    big = "Caf\u00e9 " + "word " * (fast_words.EACH_CHUNK // 5)
    events = [["a\u00e9 b"], [big], ["c"], ["d\x02"], [big, "E"], []]
    found = fast_words.joined_words_each(events)
    assert [pieces(text) for text in found] == each_expected(events)
