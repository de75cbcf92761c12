"""The words of a text as the PostgreSQL store indexes them (PGS-063, PGS-068): the clear rule.

A word is a run of letters and digits (SRC, PGS-068 says exactly which
characters): the regular expression ``[^\\W_]+``, whose class is the
characters for which :meth:`str.isalnum` holds. A word is indexed folded
(:func:`fold`): lower case, its compatibility decomposition (NFKD) without
combining marks, and the lexeme of its sha256 digest when it is longer than
:data:`LONG_WORD` UTF-8 bytes.

:func:`folded_words` is the definition the store's hot path must agree with:
``convledger.codec.folded_words`` binds it, or the fast cutter
:func:`convledger.fast.words.folded_words` that ``tests/test_fast_words.py``
proves equal to it on arbitrary Unicode text. :func:`joined_words` is the same
set as one text, the words joined by :data:`SEPARATOR`, as the store sends an
event's words to the server (which splits the text there and nothing else);
``codec.joined_words`` binds it or :func:`convledger.fast.words.joined_words`;
:func:`joined_words_each` does so for the events of a write, one text per event
(``codec.joined_words_each``, or :func:`convledger.fast.words.joined_words_each`).
This module imports nothing of the reference, so the seam may bind it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence

LONG_WORD = 200
"""PGS-063: a word of more UTF-8 bytes than this is indexed and queried by its digest."""

WORD = re.compile(r"[^\W_]+")
"""PGS-068: a run of characters for which ``str.isalnum`` holds."""

SEPARATOR = "\x01"
"""PGS-062: what separates the lexemes of an event in the text the store sends for it. No
lexeme holds it: a folded word is made of the lower case and the compatibility decomposition
of letters and digits (``tests/test_fast_words.py`` checks every code point), a digest or
conversation lexeme of ASCII letters, digits and ``:``."""


def fold(word: str) -> str:
    """PGS-063: a word as indexed: lower case, combining marks removed, digest when long.

    SRC-025: nothing else; no stem and no stop word (the lexemes are written and queried as
    given, never through a text-search configuration's rules).
    """
    if word.isascii() and len(word) <= LONG_WORD:
        return word.lower()  # NFKD leaves ASCII as it is, and it has no combining marks
    decomposed = unicodedata.normalize("NFKD", word.lower())
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)) or word.lower()
    if len(folded.encode("utf-8")) > LONG_WORD:
        return "h:" + hashlib.sha256(folded.encode("utf-8")).hexdigest()
    return folded


def folded_words(texts: Iterable[str]) -> set[str]:
    """PGS-062, PGS-063: the distinct folded words of ``texts`` (no word spans two texts)."""
    return {fold(word) for text in texts for word in WORD.findall(text)}


def joined_words(texts: Iterable[str]) -> str:
    """PGS-062: the words of :func:`folded_words`, joined by :data:`SEPARATOR`.

    What the store sends for an event: split at :data:`SEPARATOR`, with the empty pieces
    dropped, the text gives exactly the set :func:`folded_words` gives (the fast twin may
    repeat a word or leave empty pieces; the set is the same).
    """
    return SEPARATOR.join(folded_words(texts))


def joined_words_each(texts_each: Sequence[Sequence[str]]) -> list[str]:
    """PGS-062: :func:`joined_words` of each event's texts, in the order given.

    What the store sends for the events of one write; the fast twin cuts them all at once
    (each text, split at :data:`SEPARATOR` without its empty pieces, is the same set).
    """
    return [joined_words(texts) for texts in texts_each]
