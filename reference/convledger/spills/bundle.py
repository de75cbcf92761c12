"""Bundles: one file with a conversation's archive and its spill objects (SPL-050 .. SPL-055).

A bundle is the deterministic CBOR (RFC 8949 core deterministic encoding, as
``cbor2.dumps(..., canonical=True)`` writes it) of one map::

    {"archive": <byte string: the canonical JSON archive>,
     "format": "convledger.bundle",
     "formatVersion": 1,
     "objects": [[reference, <byte string>], ...]}

``objects`` holds one pair per entry of the archive's ``spills`` companion,
in the same order (by reference, code-point order), each with the object's
raw bytes. Import re-checks every size and sha256 against the companion, and
the companion against the ledger, so a bundle cannot smuggle bytes the
ledger does not vouch for.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import cbor2

from convledger import limits
from convledger.archive import Archive, decode_archive
from convledger.errors import IntegrityError, InvalidInputError, NotSupportedError
from convledger.kinds import KindRegistry
from convledger.spills.companion import COMPANION, parse_spills
from convledger.spills.objects import digest

FORMAT = "convledger.bundle"
FORMAT_VERSION = 1
_MEMBERS = frozenset({"archive", "format", "formatVersion", "objects"})


def encode_bundle(archive_bytes: bytes, objects: Mapping[str, bytes]) -> bytes:
    """SPL-050: the bundle of an archive and its objects (ordered by reference)."""
    ordered = sorted(objects.items(), key=lambda item: item[0].encode("utf-8", "surrogatepass"))
    document = {
        "archive": archive_bytes,
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "objects": [[reference, data] for reference, data in ordered],
    }
    return cbor2.dumps(document, canonical=True)  # SPL-052: the same bytes on re-export


def decode_bundle(
    data: object, registry: KindRegistry, unjudged: frozenset[str] = frozenset()
) -> Archive:
    """SPL-051 .. SPL-053: the archive a bundle carries, with its objects checked."""
    if type(data) is not bytes:
        raise _invalid("a bundle is bytes")
    try:
        document = cbor2.loads(data)
    except Exception as error:  # cbor2 raises several types for malformed input
        raise _invalid(f"not CBOR: {error}") from error
    version = document.get("formatVersion") if isinstance(document, dict) else None
    if type(version) is int and version != FORMAT_VERSION:
        # ARC-018, ERR-011 step 2: an integer other than 1, before every member rule
        raise NotSupportedError(
            f"bundle formatVersion {limits.shown(version)} is not supported", requirement="SPL-051",
            capability="bundle",
        )
    if not isinstance(document, dict) or set(document) != _MEMBERS:
        raise _invalid("a bundle is a map of exactly archive, format, formatVersion, objects")
    if document["format"] != FORMAT:
        raise _invalid(f"format must be {FORMAT!r}")
    if type(version) is not int:
        raise _invalid("formatVersion must be the integer 1 (ARC-018)")
    try:
        canonical_again = cbor2.dumps(document, canonical=True)
    except Exception as error:
        raise _invalid(f"cannot be re-encoded: {error}") from error
    if canonical_again != data:
        raise _invalid("bundle bytes are not deterministic CBOR, so they could not re-export")
    archive_bytes, pairs = document["archive"], document["objects"]
    if type(archive_bytes) is not bytes or not isinstance(pairs, list):
        raise _invalid("archive is a byte string and objects an array")
    objects = _objects(pairs)
    archive = decode_archive(archive_bytes, registry, unjudged)  # ERR-012
    entries = parse_spills(archive.companions[COMPANION]) if COMPANION in archive.companions else []
    if [entry.reference for entry in entries] != list(objects):
        raise _invalid("objects must pair exactly the spills companion's references, in order")
    for entry in entries:
        body = objects[entry.reference]
        if len(body) != entry.size or digest(body) != entry.sha256:
            raise IntegrityError(
                f"spill object {entry.reference!r} does not match its size and sha256",
                requirement="SPL-053",
            )
    return attrs.evolve(archive, objects=objects)


def _objects(pairs: list[object]) -> dict[str, bytes]:
    objects: dict[str, bytes] = {}
    for pair in pairs:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or type(pair[1]) is not bytes
            or pair[0] in objects
        ):
            raise _invalid("each object is a pair [reference, byte string], references unique")
        objects[pair[0]] = pair[1]
    return objects


def _invalid(message: str) -> InvalidInputError:
    return InvalidInputError(message, requirement="SPL-051", field="bundle")
