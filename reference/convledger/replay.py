"""The replay gate (chapter ``replay.md``, ids RPL-*).

Every reader that interprets envelopes (a fold, an import, a recovery) passes
them through :func:`admit` first (RPL-005). The decision belongs to the producer: an
event the reader does not know is skipped only when its envelope says
``ignorable: true``; otherwise the reader stops and says exactly which event it
could not read (RPL-003). Nothing here guesses.

| registered (kind, schemaVersion) | ignorable | verdict          |
|----------------------------------|-----------|------------------|
| yes                              | any       | accepted         |
| no                               | true      | ignored          |
| no                               | absent    | refused (error)  |
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

from convledger.envelope import Envelope
from convledger.errors import ReplayRefusedError
from convledger.kinds import KindRegistry


class Verdict(enum.Enum):
    """What a reader does with one envelope (RPL-001, RPL-002)."""

    ACCEPTED = "accepted"
    """Known pair: the payload is interpreted."""
    IGNORED = "ignored"
    """Unknown pair, ignorable: identity and position kept, payload not interpreted."""


def admit(envelope: Envelope, registry: KindRegistry) -> Verdict:
    """Decide one envelope by the table above, or raise :class:`ReplayRefusedError`."""
    if registry.knows(envelope.kind, envelope.schema_version):
        return Verdict.ACCEPTED
    if envelope.ignorable:
        return Verdict.IGNORED
    raise ReplayRefusedError(
        f"cannot replay {envelope.kind!r} schemaVersion {envelope.schema_version} at seq "
        f"{envelope.seq} (eventId {envelope.event_id!r}) of conversation "
        f"{envelope.conversation_id!r}: unknown and not ignorable",
        requirement="RPL-003",
        conversation_id=envelope.conversation_id,
        seq=envelope.seq,
        event_id=envelope.event_id,
        schema_version=envelope.schema_version,
        event_kind=envelope.kind,
    )


def replay(
    envelopes: Iterable[Envelope], registry: KindRegistry
) -> Iterator[tuple[Envelope, Verdict]]:
    """Yield each envelope with its verdict, stopping at the first refusal (RPL-004)."""
    for envelope in envelopes:
        yield envelope, admit(envelope, registry)
