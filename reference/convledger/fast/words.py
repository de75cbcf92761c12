"""Cutting and folding words, fast: the set :func:`convledger.words.folded_words` gives.

Theory of operation
-------------------
The clear rule runs the regular expression ``[^\\W_]+`` over each text and
folds every distinct word (:func:`convledger.words.fold`). Most of an agent's
text is ASCII, and on ASCII the rule is simple: the letters and digits are
``A-Z``, ``a-z`` and ``0-9``, every other ASCII character (``_`` included)
separates words, and folding is ``lower()``. So this cutter works on the
UTF-8 bytes of the texts, joined by a space (a separator, so no word spans two
texts):

1. one ``bytes.translate`` turns every ASCII byte that is not a letter or a
   digit into a space and every ASCII capital into its small letter; bytes
   0x80..0xFF (the non-ASCII characters) are kept, and the bytes stay valid
   UTF-8;
2. the text is decoded and cut at white space (``str.split``): ASCII
   separators are spaces now, and every other white-space character is a
   separator of the clear rule too (no character is both ``isspace`` and
   ``isalnum``);
3. a piece of ASCII only is a run of letters and digits between separators,
   that is one word of the clear rule, already folded unless it is longer than
   ``LONG_WORD`` bytes; any other piece goes to the clear rule itself (the
   regular expression and :func:`~convledger.words.fold`). A piece begins and
   ends at a separator or at the ends of the text, so the clear rule finds in
   it exactly its words of the whole text; and its ASCII capitals made small
   change nothing: ``fold`` lowers them anyway, and a small letter is as cased
   as a capital for the one context rule of ``str.lower`` (final sigma).

Each distinct piece is handled once. ``tests/test_fast_words.py`` proves the
result equal to the clear rule on generated Unicode text and on every assigned
code point.
"""

from __future__ import annotations

from collections.abc import Iterable

from convledger.words import LONG_WORD, WORD, fold


def _ascii_table() -> bytes:
    table = bytearray(range(256))
    for byte in range(0x80):
        character = chr(byte)
        table[byte] = ord(character.lower()) if character.isalnum() else 0x20
    return bytes(table)


_TABLE = _ascii_table()
"""ASCII letters and digits folded, every other ASCII byte a space, bytes 0x80.. kept."""


def folded_words(texts: Iterable[str]) -> set[str]:
    """The distinct folded words of ``texts``, as :func:`convledger.words.folded_words`."""
    data = " ".join(texts).encode("utf-8", "surrogatepass").translate(_TABLE)
    pieces = set(data.decode("utf-8", "surrogatepass").split())
    found = {piece for piece in pieces if piece.isascii() and len(piece) <= LONG_WORD}
    for piece in pieces - found:
        found.update(fold(word) for word in WORD.findall(piece))
    return found
