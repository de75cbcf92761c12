"""The append checks in one pass: what :func:`convledger.batch.validated_batch` returns, sooner.

Theory of operation
-------------------
The definition is :func:`convledger.batch.validated_batch` (LED-001, LED-003,
LED-005, LED-006, ENV-*, KND-002, KND-003, LIM-*, TRN-108): the conversation
id, the batch, every draft's fields and its payload's encoding (ENV-009,
LIM-004, LIM-005), then every payload against its kind's schema and the
runtime kinds, then the expected head, then the eventIds repeated inside the
batch, in that order (ERR-010). Written as it is, it walks the batch three
times and calls a checking function per field, each of which raises when the
value is wrong.

:func:`fused` returns a function that ANSWERS ONLY THE COMMON CASE: one pass
over the drafts with cheap tests of exact types (a value of another type, a
subclass of ``str`` or ``int``, a draft of another class, a sequence other than
a ``list`` or ``tuple``, a non-ASCII identifier too long to tell by its length
all fail them), which are each a sufficient condition for the clear check
they stand for to pass. The first test that fails hands the whole call to the
clear :func:`~convledger.batch.validated_batch`, which returns its result or
raises its own refusal: so every refusal, its kind, requirement, field and
message, is the clear code's (ERR-007 .. ERR-011), and a batch the tests pass
gets the drafts the clear code would make, built the same way (the payload's
canonical bytes and its copy from :func:`convledger.fast.payload.
encode_payload_copied`, the same seam function the clear code calls on the
fast code).

Two checks need no hand-over when they fail, because the clear code's answer
is the same function of the same value and nothing the clear code checks
later can come first:

* a payload the kind's compiled validator does not accept (or a kind with no
  compiled validator) is judged by :meth:`~convledger.kinds.KindRegistry.
  check_payload`, the definition, after the pass, in the order of the drafts:
  the pass found no refusal of the fields, encodings, expected head or
  repeated eventIds (it would have handed over), so the clear code's first
  refusal is that of the first such payload, exactly as here;
* nothing else: a runtime kind (TRN-108), a repeated eventId (LED-003) and any
  other failed test hand over.

``tests/test_fast_append.py`` proves the result equal (the same drafts, the
same canonical text and bytes) or the refusal equal (the same error class,
kind, requirement, field and message) on generated valid and hostile batches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from convledger.fast.decode import decode_stored_bytes
from convledger.fast.payload import encode_payload_copied
from convledger.limits import (
    MAX_IDENTIFIER_BYTES,
    MAX_INTEGER,
    MAX_OCCURRED_AT_BYTES,
    MAX_PAYLOAD_BYTES,
)

Checks = Callable[[Any, object, object, object], tuple[Any, ...]]
"""``validated_batch(registry, conversation_id, drafts, expected_head)``."""


class Registry(Protocol):
    """What the pass asks of a :class:`~convledger.kinds.KindRegistry`."""

    def compiled_accepts(self, kind: str, schema_version: int) -> Callable[[object], bool] | None:
        """The pair's compiled validator, or None."""

    def check_payload(self, kind: str, schema_version: int, payload: Any) -> None:
        """KND-002, KND-003: the definition."""


OCCURRED_AT: Final = re.compile(
    r"[0-9]{4}-"
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    r"[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
"""ENV-008, ENV-013, LIM-009 in one regular expression, for every date but a 29 February (the
clear check decides that one): a full match is sufficient for ``check_occurred_at`` to pass."""

_SEQUENCES: Final = (list, tuple)


def _identifier(value: object) -> bool:
    """Sufficient for ``limits.check_text`` to pass: an exact ``str`` of 1 .. LIM-001 bytes
    holding no lone surrogate (an ASCII string's length is its UTF-8 size)."""
    if type(value) is not str or not value:
        return False
    if value.isascii():
        return len(value) <= MAX_IDENTIFIER_BYTES
    if len(value) > MAX_IDENTIFIER_BYTES:
        return False
    try:
        return len(value.encode("utf-8")) <= MAX_IDENTIFIER_BYTES
    except UnicodeEncodeError:
        return False


def fused(
    clear: Checks,
    draft_type: type[Any],
    detached: Callable[..., Any],
    runtime_kinds: frozenset[str],
    max_batch: int,
) -> Checks:
    """``clear`` (``validated_batch``) as one pass over the drafts (see above).

    ``draft_type`` is ``EventDraft`` (a draft of that exact class is read field by
    field), ``detached`` makes a ``DetachedDraft`` as ``batch._detached`` does,
    ``runtime_kinds`` the kinds TRN-108 refuses, ``max_batch`` LED-001's limit.
    """

    def validated_batch(
        registry: Registry, conversation_id: object, drafts: object, expected_head: object
    ) -> tuple[Any, ...]:
        if (
            not _identifier(conversation_id)
            or type(drafts) not in _SEQUENCES
            or not 0 < len(drafts) <= max_batch  # type: ignore[arg-type]
            or (
                expected_head is not None
                and (type(expected_head) is not int or not 0 <= expected_head <= MAX_INTEGER)
            )
        ):
            return clear(registry, conversation_id, drafts, expected_head)
        items: Sequence[Any] = drafts  # type: ignore[assignment]  # a list or a tuple
        seen: set[str] = set()
        checked: list[Any] = []
        judge: list[tuple[str, int, Any]] = []
        accepts_of: dict[tuple[str, int], Callable[[object], bool] | None] = {}
        for draft in items:
            if type(draft) is not draft_type:
                return clear(registry, conversation_id, drafts, expected_head)
            version = draft.schema_version
            event_id = draft.event_id
            kind = draft.kind
            occurred_at = draft.occurred_at
            ignorable = draft.ignorable
            if (
                type(version) is not int
                or not 0 < version <= MAX_INTEGER
                or not _identifier(event_id)
                or not _identifier(kind)
                or type(occurred_at) is not str
                or len(occurred_at) > MAX_OCCURRED_AT_BYTES
                or OCCURRED_AT.fullmatch(occurred_at) is None
                or (ignorable is not True and ignorable is not False)
                or kind in runtime_kinds
                or event_id in seen
            ):
                return clear(registry, conversation_id, drafts, expected_head)
            seen.add(event_id)
            try:
                encoded, payload = encode_payload_copied(draft.payload)
                if len(encoded) > MAX_PAYLOAD_BYTES:
                    return clear(registry, conversation_id, drafts, expected_head)
                if payload is None:
                    payload = decode_stored_bytes(encoded)
            except Exception:  # whatever it is, the clear code raises it in its place
                return clear(registry, conversation_id, drafts, expected_head)
            key = (kind, version)
            try:
                accepts = accepts_of[key]
            except KeyError:
                accepts = accepts_of[key] = registry.compiled_accepts(kind, version)
            if accepts is None or not accepts(payload):
                judge.append((kind, version, payload))
            checked.append(
                detached(
                    event_id,
                    kind,
                    occurred_at,
                    payload,
                    version,
                    ignorable,
                    canonical_payload=encoded.decode("utf-8"),
                    canonical_bytes=encoded,
                )
            )
        for kind, version, payload in judge:  # KND-002, KND-003: the definition, in order
            registry.check_payload(kind, version, payload)
        return tuple(checked)

    return validated_batch
