"""Spill objects: their metadata and the checks of a put (SPL-001 .. SPL-006).

A spill object is a binary payload too large or too opaque for the ledger
(tool output, a file a model produced). The object lives beside the ledger;
the ledger records it with ``spill/created`` ``{reference, bytes, sha256,
mediaType}`` and its end with ``spill/deleted`` ``{reference, bytes,
reason}``. The object remembers the operation that created it, with that
operation's authorization descriptor, because every read asks the caller's
authorization callback about that descriptor again (SPL-020).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import attrs

from convledger import canonical, codec, limits
from convledger.canonical import JsonValue
from convledger.envelope import check_identifier
from convledger.errors import CanonicalJsonError, InvalidInputError

MAX_SPILL_BYTES = 16 * 1024 * 1024
"""SPL-003: the largest spill object, 16 MiB."""
MAX_MEDIA_TYPE_CHARS = 255
MAX_REFERENCE_CHARS = 1024
CREATED = "spill/created"
DELETED = "spill/deleted"
REASONS = ("deleted", "expired")
"""SPL-030: why an object ends."""

_NAME = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
MEDIA_TYPE = re.compile(rf"{_NAME}/{_NAME}(?:; ?{_NAME}=(?:{_NAME}|\"[ -!#-~]*\"))*")
"""SPL-004, SPL-056: ``type/subtype`` in lower case, with optional ``; name=value`` parameters."""

Authorize = Callable[[JsonValue], bool]
"""``authorize(descriptor)``: the literal True grants, anything else denies (SPL-020)."""


@attrs.frozen
class SpillMetadata:
    """What the store keeps about one live object besides its bytes (SPL-010)."""

    reference: str
    media_type: str
    size: int
    sha256: str
    created_seq: int
    operation: JsonValue = attrs.field(eq=False)

    def to_json(self) -> dict[str, JsonValue]:
        """SPL-040: one entry of the ``spills`` companion."""
        return {
            "reference": self.reference,
            "mediaType": self.media_type,
            "bytes": self.size,
            "sha256": self.sha256,
            "createdSeq": self.created_seq,
            "operation": self.operation,
        }

    @property
    def descriptor(self) -> JsonValue:
        """The creating operation's authorization descriptor."""
        assert isinstance(self.operation, dict)
        descriptor: JsonValue = self.operation["authorization"]
        return descriptor


def digest(data: bytes) -> str:
    """The lower-case hex sha256 of ``data`` (SPL-010)."""
    return hashlib.sha256(data).hexdigest()


def check_data(data: object) -> bytes:
    """SPL-002, SPL-003: exactly ``bytes``, at most :data:`MAX_SPILL_BYTES` long."""
    if type(data) is not bytes:
        raise InvalidInputError(
            f"spill data must be bytes, got {type(data).__name__}", requirement="SPL-002",
            field="data",
        )
    if len(data) > MAX_SPILL_BYTES:
        raise InvalidInputError(
            f"a spill object has at most {MAX_SPILL_BYTES} bytes, got {len(data)}",
            requirement="SPL-003",
            field="data",
        )
    return data


def check_media_type(value: object) -> str:
    """SPL-004: a lower-case media type of at most 255 characters."""
    if (
        not isinstance(value, str)
        or len(value) > MAX_MEDIA_TYPE_CHARS
        or MEDIA_TYPE.fullmatch(value) is None
    ):
        raise InvalidInputError(
            f"media_type must be a lower-case type/subtype, got {limits.shown(value)}",
            requirement="SPL-004",
            field="media_type",
        )
    return value


def check_reference(value: object) -> str:
    """SPL-005: a non-empty string of scalar values, at most 1024 characters."""
    reference = check_identifier(value, "reference", "SPL-005")
    if len(reference) > MAX_REFERENCE_CHARS:
        raise InvalidInputError(
            f"a reference has at most {MAX_REFERENCE_CHARS} characters", requirement="SPL-005",
            field="reference",
        )
    return reference


def check_operation(value: object) -> dict[str, JsonValue]:
    """SPL-006: ``{operationId, authorization}``, a non-empty id and a JSON object."""
    if not isinstance(value, dict) or set(value) != {"operationId", "authorization"}:
        raise InvalidInputError(
            "operation must be exactly {operationId, authorization}", requirement="SPL-006",
            field="operation",
        )
    check_identifier(value["operationId"], "operation.operationId", "SPL-006")
    if not isinstance(value["authorization"], dict):
        raise InvalidInputError(
            "operation.authorization must be a JSON object", requirement="SPL-006",
            field="operation",
        )
    limits.check_depth(value, "operation")  # LIM-005
    try:
        detached = limits.check_size(codec.encode(value), "operation")  # LIM-004
    except CanonicalJsonError as error:
        raise InvalidInputError(
            f"operation is not JSON: {error.message}", requirement="SPL-006", field="operation"
        ) from error
    copied = canonical.decode(detached)
    assert isinstance(copied, dict)
    return copied


def check_authorize(value: object) -> Authorize:
    """SPL-020, SPL-057: the callback is required and callable (else invalid_input)."""
    if not callable(value):
        raise InvalidInputError(
            "authorize must be a callable", requirement="SPL-020", field="authorize"
        )
    return value


def check_reason(value: object) -> str:
    """SPL-030: ``deleted`` or ``expired``."""
    if not isinstance(value, str) or value not in REASONS:
        raise InvalidInputError(
            f"reason must be one of {REASONS}, got {limits.shown(value)}", requirement="SPL-030",
            field="reason",
        )
    return value
