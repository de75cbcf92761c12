"""Content-addressed provider bodies (PRV-003 .. PRV-005).

A body sent to a provider is recorded once per conversation as its ledger
form: the body with every binary part (a ``bytes`` value) replaced by
``{binary: true, sha256, bytes}``. Its hash is the SHA256 of that form's
canonical JSON; a request's body hash is derived from the hashes alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from convledger import canonical
from convledger.canonical import JsonValue


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA256."""
    return hashlib.sha256(data).hexdigest()


def ledger_form(value: object) -> JsonValue:
    """PRV-005: the body with binary parts replaced by their stub, recursively."""
    if isinstance(value, bytes | bytearray):
        return {"binary": True, "sha256": sha256_hex(bytes(value)), "bytes": len(value)}
    if isinstance(value, Mapping):
        return {str(key): ledger_form(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [ledger_form(item) for item in value]
    assert value is None or isinstance(value, str | int | float | bool)
    return value


def message_sha(message: JsonValue) -> str:
    """PRV-005: the hash of a ledger-form body's canonical JSON."""
    return sha256_hex(canonical.encode(message))


def instructions_sha(instructions: str) -> str:
    """PRV-003: the hash of the UTF-8 instructions."""
    return sha256_hex(instructions.encode("utf-8"))


def body_sha(instructions_sha256: str, message_shas: Sequence[str]) -> str:
    """PRV-003: SHA256 of ``instructionsSha256`` followed by ``messageShas`` joined with ``,``."""
    return sha256_hex((instructions_sha256 + ",".join(message_shas)).encode("utf-8"))
