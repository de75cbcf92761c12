"""The one seam between the clear code and the fast code (``convledger.fast``).

The reference's hot paths (append, read, export, import) encode and decode
canonical JSON through this module and nowhere else: it is the only module of
the reference outside ``convledger/fast/`` that imports ``convledger.fast``
(``tests/test_codec_seam.py`` walks the sources and fails otherwise). The
conformance suite never imports it: its models, machines and checks use the
clear code (``convledger.canonical``) directly.

Each function here is bound, once at import, to one of two implementations
that must agree exactly (same bytes, same values, same errors):

=====================  =====================================  =================================
function               clear implementation (the definition)  fast implementation and its proof
=====================  =====================================  =================================
:func:`encode`         :func:`convledger.canonical.encode`    :func:`convledger.fast.canonical.
                       (CAN-001 .. CAN-009)                   encode`, ``tests/test_fast_
                                                              canonical.py``
:func:`decode_stored`  ``canonical.decode(text.encode())``    :func:`convledger.fast.decode.
                       (CAN-010 .. CAN-013)                   decode_stored`, ``tests/test_fast_
                                                              decode.py``; on canonical text
                                                              only (text a store wrote)
:func:`decode_stored_ ``[canonical.decode(data) for data   :func:`convledger.fast.decode.
page`                  in texts]`` (CAN-010 .. CAN-013)       decode_stored_page` (msgspec),
                                                              ``tests/test_fast_decode.py``; on
                                                              canonical bytes only (the SQLite
                                                              read path)
:func:`decode_stored_ ``canonical.decode(data)``             :func:`convledger.fast.decode.
bytes`                 (CAN-010 .. CAN-013)                   decode_stored_bytes` (msgspec),
                                                              ``tests/test_fast_decode.py``; on
                                                              canonical bytes only (the copies
                                                              of an append, LED-014)
:func:`decode_       None: the caller decodes with          :func:`convledger.fast.decode.
canonical`             ``canonical.decode`` and compares      decode_canonical` (msgspec, then
                       ``encode(value) == data`` (ARC-003)    the fast encoder), ``tests/test_
                                                              fast_decode.py``; on any bytes
:data:`encode_stored`  None: the caller writes               :func:`convledger.fast.archive.
                       ``encode_archive(archive_of(cid,       encode_stored`, ``tests/test_fast_
                       [envelope_of(row) ...], companions))`` archive.py``; on rows a store wrote
                       (ARC-001, ARC-004, SQL-005)
:func:`encode_payload` ``canonical.encode(value,              :func:`convledger.fast.canonical.
                       max_depth=MAX_DEPTH)`` (CAN-001,       encode` with the same ``max_depth``,
                       LIM-005)                               ``tests/test_fast_canonical.py``
:func:`encode_payload_  ``(canonical.encode(value,             :func:`convledger.fast.payload.
copied`                max_depth=MAX_DEPTH), None)``: the     encode_payload_copied` (orjson,
                       caller decodes its copy (LED-014)      then msgspec), ``tests/test_fast_
                                                              payload.py``; the copy, when given,
                                                              is ``canonical.decode`` of the bytes
:func:`compile_schema` None for every schema: the registry's  :func:`convledger.fast.validate.
                       ``jsonschema`` validator judges each   compile_accepts`, ``tests/test_
                       payload (KND-003)                      fast_validate.py``; it only
                                                              accepts, the clear code refuses
:func:`folded_words`   :func:`convledger.words.folded_words`  :func:`convledger.fast.words.
                       (PGS-062, PGS-063, PGS-068)            folded_words`, ``tests/test_fast_
                                                              words.py``
:func:`joined_words`   :func:`convledger.words.joined_words`  :func:`convledger.fast.words.
                       (PGS-062, PGS-063, PGS-068)            joined_words`, ``tests/test_fast_
                                                              words.py``; equal as sets of the
                                                              pieces between separators
:func:`joined_words_   :func:`convledger.words.joined_words_  :func:`convledger.fast.words.
each`                  each` (PGS-062)                        joined_words_each`, ``tests/test_
                                                              fast_words.py``, ``tests/test_
                                                              postgres_lexemes.py``; the same,
                                                              event by event
:func:`fuse_append_  the clear ``validated_batch`` itself   :func:`convledger.fast.append.
checks`                (:mod:`convledger.batch`, LED-001,     fused`, ``tests/test_fast_
                       ERR-010)                               append.py``; one pass, the clear
                                                              code's answer to any batch the
                                                              pass does not accept at once
=====================  =====================================  =================================

Choosing the implementation: the environment variable ``CONVLEDGER_CODEC``,
read once when this module is first imported: ``fast`` (the default, also when
unset or empty) or ``clear``; any other value raises ``ValueError`` at import,
so a typo cannot silently run the fast code. :data:`CHOSEN` says which one is in
use. To run the reference (its tests, a store, the conformance CLI against
it) on the clear code::

    CONVLEDGER_CODEC=clear python -m pytest -q tests/test_memory_store.py tests/test_sqlite_store.py

``tests/test_codec_seam.py`` does exactly that in a subprocess and requires
the run to pass. The choice cannot change later in a process: modules that
cache encoded values (projection schemas, checkpoints) would otherwise mix the
two, harmless as that is when they agree.

With the clear choice, ``convledger.fast`` is not imported at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, cast

from convledger import canonical, words
from convledger.canonical import JsonValue
from convledger.limits import MAX_DEPTH

StoredRow = tuple[str, int, str, str, int, str, str, int]
"""One stored ``events`` row: (conversation_id, seq, event_id, kind, schema_version,
occurred_at, payload, ignorable), as ``convledger.sqlite.rows`` writes it (SQL-005)."""

ENVIRONMENT: Final = "CONVLEDGER_CODEC"
"""The environment variable that chooses the implementation: ``fast`` or ``clear``."""


def _chosen(value: str) -> Literal["fast", "clear"]:
    """The implementation named by the environment variable's value (empty: ``fast``)."""
    if value in ("", "fast"):
        return "fast"
    if value == "clear":
        return "clear"
    raise ValueError(f"{ENVIRONMENT} must be 'fast' or 'clear', not {value!r}")


CHOSEN: Final[Literal["fast", "clear"]] = _chosen(os.environ.get(ENVIRONMENT, ""))
"""The implementation this process uses, chosen once at import."""


def _clear_decode_stored(text: str) -> JsonValue:
    """CAN-010 .. CAN-013: the strict decoder on the UTF-8 bytes of stored text."""
    return cast(JsonValue, canonical.decode(text.encode("utf-8")))


def _clear_decode_stored_bytes(data: bytes) -> JsonValue:
    """CAN-010 .. CAN-013: the strict decoder on stored UTF-8 bytes."""
    return cast(JsonValue, canonical.decode(data))


def _clear_decode_stored_page(texts: Sequence[bytes]) -> list[JsonValue]:
    """CAN-010 .. CAN-013: the strict decoder on each stored UTF-8 text, in order."""
    return [cast(JsonValue, canonical.decode(data)) for data in texts]


def _clear_decode_canonical(data: bytes) -> None:
    """No shortcut: the caller decodes strictly and compares the encoding (ARC-003)."""
    return None


encode: Callable[[object], bytes]
"""The canonical JSON bytes of a value (CAN-001), or ``CanonicalJsonError`` with the
clear encoder's ``reason``."""

decode_stored: Callable[[str], JsonValue]
"""The value of canonical JSON text a store wrote (CAN-010 .. CAN-013)."""

decode_stored_bytes: Callable[[bytes], JsonValue]
"""The value of canonical JSON a store wrote, given as its UTF-8 bytes (CAN-010 .. CAN-013):
the append path decodes its detached copies so (LED-014)."""

decode_stored_page: Callable[[Sequence[bytes]], list[JsonValue]]
"""The values of canonical JSON texts a store wrote, given as their UTF-8 bytes, in order
(CAN-010 .. CAN-013): the SQLite read path fetches a page of payloads so."""

decode_canonical: Callable[[bytes], object | None]
"""The value of ``data`` when it is canonical JSON, else None (the caller then decodes with
``canonical.decode`` and reports what is wrong, ARC-003); None for the clear code always."""

encode_stored: Callable[[str, Sequence[StoredRow], Mapping[str, JsonValue]], bytes] | None
"""The canonical archive bytes of stored rows and companions (ARC-001, ARC-004), or None
on the clear code: the caller then decodes every row into its envelope and encodes the
archive of those (``encode_archive(archive_of(cid, [envelope_of(row) ...], companions))``),
which lives with the caller because this module may import nothing above canonical JSON."""

encode_payload: Callable[[object], bytes]
"""The canonical JSON bytes of a payload (CAN-001), refusing nesting deeper than LIM-005 allows
in the same walk: ``CanonicalJsonError`` with reason ``too_deep`` (see
:func:`convledger.canonical.encode`)."""

encode_payload_copied: Callable[[object], tuple[bytes, JsonValue | None]]
""":data:`encode_payload`, and the value ``canonical.decode`` reads from those bytes, or None
when the caller must decode it itself: the append path's copy of a payload (LED-014)."""

compile_schema: Callable[[Mapping[str, object]], Callable[[object], bool] | None]
"""For a payload schema, a predicate that answers True only for payloads the schema accepts,
or None; a False answer decides nothing (KND-003, :func:`convledger.batch.validated_batch`)."""


def _clear_encode_payload(value: object) -> bytes:
    """CAN-001 and LIM-005 in one walk of the clear encoder."""
    return canonical.encode(value, max_depth=MAX_DEPTH)


def _clear_encode_payload_copied(value: object) -> tuple[bytes, JsonValue | None]:
    """The clear encoding (CAN-001, LIM-005); the caller decodes the copy (LED-014)."""
    return canonical.encode(value, max_depth=MAX_DEPTH), None


def _no_compiled_schema(schema: Mapping[str, object]) -> None:
    """The clear code compiles nothing: the registry's validator judges every payload."""
    return None


AppendChecks = Callable[[Any, object, object, object], tuple[Any, ...]]
"""``validated_batch(registry, conversation_id, drafts, expected_head)`` of convledger.batch."""

fuse_append_checks: Callable[
    [AppendChecks, type, Callable[..., Any], frozenset[str], int], AppendChecks
]
"""Given the clear ``validated_batch``, ``EventDraft``, ``DetachedDraft``, the runtime kinds
(TRN-108) and LED-001's batch limit: the function the stores call, the same answers as the clear
one (:mod:`convledger.batch` passes its own pieces: this module imports nothing above it)."""


def _not_fused(
    clear: AppendChecks, draft_type: type, detached: Callable[..., Any],
    runtime_kinds: frozenset[str], max_batch: int,
) -> AppendChecks:
    """The clear code fuses nothing: the stores call ``validated_batch`` itself."""
    return clear


folded_words: Callable[[Iterable[str]], set[str]]
"""The distinct folded words of texts, as the PostgreSQL store indexes them (PGS-063)."""

joined_words: Callable[[Iterable[str]], str]
"""The folded words of texts joined by ``words.SEPARATOR``, as the PostgreSQL store sends an
event's words (PGS-062): split there, without empty pieces, the set :data:`folded_words` gives."""

joined_words_each: Callable[[Sequence[Sequence[str]]], list[str]]
""":data:`joined_words` of each event's texts, for the events of one write, in order."""


if CHOSEN == "fast":
    from convledger.fast import append as _fast_append
    from convledger.fast import archive as _fast_archive
    from convledger.fast import canonical as _fast_canonical
    from convledger.fast import decode as _fast_decode
    from convledger.fast import payload as _fast_payload
    from convledger.fast import validate as _fast_validate
    from convledger.fast import words as _fast_words

    encode = _fast_canonical.encode
    decode_stored = _fast_decode.decode_stored
    decode_stored_bytes = _fast_decode.decode_stored_bytes
    decode_stored_page = _fast_decode.decode_stored_page
    decode_canonical = _fast_decode.decode_canonical
    encode_stored = _fast_archive.encode_stored
    encode_payload = _fast_canonical.encode_payload
    encode_payload_copied = _fast_payload.encode_payload_copied
    compile_schema = _fast_validate.compile_accepts
    folded_words = _fast_words.folded_words
    joined_words = _fast_words.joined_words
    joined_words_each = _fast_words.joined_words_each
    fuse_append_checks = _fast_append.fused
else:
    encode = canonical.encode
    decode_stored = _clear_decode_stored
    decode_stored_bytes = _clear_decode_stored_bytes
    decode_stored_page = _clear_decode_stored_page
    decode_canonical = _clear_decode_canonical
    encode_stored = None
    encode_payload = _clear_encode_payload
    encode_payload_copied = _clear_encode_payload_copied
    compile_schema = _no_compiled_schema
    folded_words = words.folded_words
    joined_words = words.joined_words
    joined_words_each = words.joined_words_each
    fuse_append_checks = _not_fused

__all__ = [
    "CHOSEN",
    "ENVIRONMENT",
    "StoredRow",
    "compile_schema",
    "decode_canonical",
    "decode_stored",
    "decode_stored_bytes",
    "decode_stored_page",
    "encode",
    "encode_payload",
    "encode_payload_copied",
    "encode_stored",
    "folded_words",
    "fuse_append_checks",
    "joined_words",
    "joined_words_each",
]
