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

Joined words, without a Python object per word
----------------------------------------------
:func:`joined_words` gives the same set as one text, the words separated by
:data:`~convledger.words.SEPARATOR` (``\\x01``), which the server splits
(``string_to_array``; it drops the empty pieces, and ``array_to_tsvector`` the
repeated words). Most of the cost of :func:`folded_words` is the string and
the set entry it makes for every piece; this one makes none for ASCII words:

1. one ``bytes.translate`` as above, but every ASCII separator becomes
   ``\\x01``; on ASCII text that is already the answer: the pieces between the
   ``\\x01`` are the words, folded;
2. a second ``translate`` (:data:`_CLASSES`) marks every ASCII letter or digit
   ``x`` and every non-ASCII byte 0x80: ``find`` then reaches each piece holding
   a non-ASCII byte, which is widened to the ``\\x01`` on either side, cut out
   and given to the clear rule, as above; its folded words are appended, joined
   by ``\\x01`` too (a folded word may hold a space, never ``\\x01``);
3. when the marks hold a run of more than ``LONG_WORD`` ``x`` (a substring
   search), the ASCII pieces are folded one by one, which gives a long one its
   digest (a run inside a piece cut out in step 2 only costs this detour).

The folded words of a piece cut out in step 2 are a function of its bytes alone, so they are
remembered (:data:`_ODD_PIECES`, at most :data:`ODD_PIECES` pieces, then emptied): words
holding an accent recur in a language (``café``, ``naïve``, ``Straße``), and a remembered
piece costs one dictionary look-up instead of a decode, the regular expression and
``unicodedata.normalize`` (~2.5 us of the ~8 us of a 600-byte agent message).

The events of a write at once
-----------------------------
:func:`joined_words_each` gives :func:`joined_words` of each event's texts, one text per
event, with one pass of each step over the whole write instead of one per event (most of
the cost of a 600-byte event is the calls, not the bytes):

1. each event's texts are joined by a space and the events by ``" \\x02 "``
   (:data:`BOUNDARY` between two separators), then encoded and translated once, by
   :data:`_JOINING` except that ``\\x02`` is kept (:data:`_EACH_JOINING`); the marks
   (:data:`_EACH_CLASSES`) count ``\\x02`` as a separator, so no run of ``x`` crosses an event;
2. a piece holding a non-ASCII byte (between two ``\\x01``, so inside one event) is
   REPLACED IN PLACE by its folded words joined by ``\\x01`` (remembered in
   :data:`_ODD_BYTES`, as :data:`_ODD_PIECES`), so its words stay in its event's text;
3. the text is decoded once and split at ``\\x02`` (one C call): one text per event.

A write of more than :data:`EACH_CHUNK` characters of text is cut in chunks of about that
size, so its transient copies stay small whatever the payloads.

No folded word holds ``\\x02`` (``tests/test_fast_words.py`` checks every code point), so
the split gives one text per event unless a payload's string holds ``\\x02`` itself (but in
a piece replaced in step 2, where it went with the piece, a separator as any other); then,
and when a word is longer than ``LONG_WORD`` bytes (a run of more than ``LONG_WORD`` ``x``
in the marks), every event is cut by :func:`joined_words` alone.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate

from convledger.words import LONG_WORD, SEPARATOR, WORD, fold


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


_BREAK = ord(SEPARATOR)


def _joining_table() -> bytes:
    table = bytearray(range(256))
    for byte in range(0x80):
        character = chr(byte)
        table[byte] = ord(character.lower()) if character.isalnum() else _BREAK
    return bytes(table)


_JOINING = _joining_table()
"""ASCII letters and digits folded, every other ASCII byte the separator, bytes 0x80.. kept."""

_CLASSES = bytes(_BREAK if byte == _BREAK else ord("x") if byte < 0x80 else 0x80
                 for byte in range(256))
"""The separator kept, every other ASCII byte ``x``, every other byte 0x80: a long ASCII
word is a long run of ``x``, and one ``find`` finds the next non-ASCII byte."""

_LONG_RUN = b"x" * (LONG_WORD + 1)


def joined_words(texts: Iterable[str]) -> str:
    """The words :func:`convledger.words.folded_words` gives, joined by ``SEPARATOR``.

    Some words may come twice and some pieces may be empty; split at ``SEPARATOR``, without
    the empty pieces, the text is exactly that set (as :func:`convledger.words.joined_words`).
    """
    data = " ".join(texts).encode("utf-8", "surrogatepass").translate(_JOINING)
    odd: set[str] = set()
    if data.isascii():
        long = len(data) > LONG_WORD and _LONG_RUN in data.translate(_CLASSES)
    else:
        classes = data.translate(_CLASSES)
        long = len(data) > LONG_WORD and _LONG_RUN in classes  # maybe in an odd piece: harmless
        data, odd = _cut_odd_pieces(data, classes)
    text = data.decode("ascii")
    if long:  # a word of more than LONG_WORD bytes is stored as its digest (fold)
        text = SEPARATOR.join({fold(piece) for piece in text.split(SEPARATOR) if piece})
    if odd:
        return text + SEPARATOR + SEPARATOR.join(odd)
    return text


ODD_PIECES = 4096
"""The most pieces :data:`_ODD_PIECES` remembers before it is emptied."""

_ODD_PIECES: dict[bytes, tuple[str, ...]] = {}
"""The folded words of a piece holding a non-ASCII byte (as translated by :data:`_JOINING`)."""


def _odd_piece_words(piece: bytes) -> tuple[str, ...]:
    """The folded words of one piece holding a non-ASCII byte, by the clear rule, remembered."""
    found = _ODD_PIECES.get(piece)
    if found is None:
        found = tuple(map(fold, WORD.findall(piece.decode("utf-8", "surrogatepass"))))
        if len(_ODD_PIECES) >= ODD_PIECES:
            _ODD_PIECES.clear()
        _ODD_PIECES[piece] = found
    return found


def _cut_odd_pieces(data: bytes, classes: bytes) -> tuple[bytes, set[str]]:
    """The ASCII pieces of ``data`` (separated as they were) and the folded words of the others;
    ``classes`` is ``data`` translated by :data:`_CLASSES`."""
    kept: list[bytes] = []
    found: set[str] = set()
    end = 0
    at = classes.find(0x80)
    while at >= 0:
        start = data.rfind(_BREAK, 0, at) + 1
        kept.append(data[end:start])
        end = data.find(_BREAK, at)
        if end < 0:
            end = len(data)
        found.update(_odd_piece_words(data[start:end]))
        at = classes.find(0x80, end)
    kept.append(data[end:])
    return b"".join(kept), found


BOUNDARY = "\x02"
"""What separates the events of a write in :func:`joined_words_each` (no folded word holds it)."""

_EACH_JOINING = _JOINING[:2] + b"\x02" + _JOINING[3:]
""":data:`_JOINING` with ``\\x02`` kept: the boundary of two events."""

_EACH_CLASSES = _CLASSES[:2] + bytes([_BREAK]) + _CLASSES[3:]
""":data:`_CLASSES` with ``\\x02`` a separator: no run of ``x`` spans two events."""

_ODD_BYTES: dict[bytes, bytes] = {}
"""The folded words of a piece holding a non-ASCII byte, joined by ``SEPARATOR``, in UTF-8."""


def _odd_piece_bytes(piece: bytes) -> bytes:
    """:func:`_odd_piece_words` of ``piece`` joined by ``SEPARATOR`` (UTF-8), remembered."""
    found = _ODD_BYTES.get(piece)
    if found is None:
        found = SEPARATOR.join(_odd_piece_words(piece)).encode("utf-8")
        if len(_ODD_BYTES) >= ODD_PIECES:
            _ODD_BYTES.clear()
        _ODD_BYTES[piece] = found
    return found


def _replace_odd_pieces(data: bytes, classes: bytes) -> bytes:
    """``data`` with each piece holding a non-ASCII byte replaced by its folded words;
    ``classes`` is ``data`` translated by :data:`_EACH_CLASSES`."""
    kept: list[bytes] = []
    keep = kept.append
    end = 0
    at = classes.find(0x80)
    while at >= 0:
        start = data.rfind(_BREAK, 0, at) + 1
        keep(data[end:start])
        end = data.find(_BREAK, at)
        if end < 0:
            end = len(data)
        keep(_odd_piece_bytes(data[start:end]))
        at = classes.find(0x80, end)
    keep(data[end:])
    return b"".join(kept)


EACH_CHUNK = 1 << 20
"""The most characters of texts :func:`joined_words_each` cuts in one pass (more events are cut
in chunks of about this size, so a write of large payloads never copies all its text at once);
an event larger than this is a chunk of its own."""


def _cut_events(events: list[str]) -> list[str]:
    """:func:`joined_words` of each text of ``events`` (each an event's texts joined by a
    space), in one pass (see "The events of a write at once")."""
    joined = f" {BOUNDARY} ".join(events)
    data = joined.encode("utf-8", "surrogatepass").translate(_EACH_JOINING)
    classes = data.translate(_EACH_CLASSES)
    if len(data) > LONG_WORD and _LONG_RUN in classes:
        return [joined_words((event,)) for event in events]
    if not data.isascii():
        data = _replace_odd_pieces(data, classes)
    found = data.decode("utf-8").split(BOUNDARY)
    if len(found) != len(events):  # a payload's string holds BOUNDARY (step 3)
        return [joined_words((event,)) for event in events]
    return found


def joined_words_each(texts_each: Sequence[Sequence[str]]) -> list[str]:
    """:func:`joined_words` of each event's texts (as
    :func:`convledger.words.joined_words_each`): one text per event, in order.

    The texts of an event joined by a space hold the same words (a space separates): the
    events are cut so, :data:`EACH_CHUNK` characters at a time.
    """
    events = [" ".join(texts) for texts in texts_each]
    ends = list(accumulate(map(len, events)))
    found: list[str] = []
    start = 0
    while start < len(events):
        before = ends[start - 1] if start else 0
        stop = max(start + 1, bisect_right(ends, before + EACH_CHUNK, start))
        found += _cut_events(events[start:stop])
        start = stop
    return found
