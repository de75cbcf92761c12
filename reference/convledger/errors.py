"""Typed errors of the ledger (spec chapter ``errors.md``, ids ERR-*).

There is one root, :class:`LedgerError`, and one subclass per way a caller
reacts to a refusal. The *kind* of each class (its ``kind`` attribute) is
normative and is what conformance vectors and the wire protocol compare; the
message text is not normative (ERR-002). Every error names the requirement id
it enforces (ERR-003), so a reader can go from a traceback to the spec
sentence.

| kind             | class                 | what the caller does                        |
|------------------|-----------------------|---------------------------------------------|
| conflict         | ConflictError         | re-read the state and decide again          |
| duplicate        | DuplicateError        | the thing already exists; treat as done     |
| not_found        | NotFoundError         | stop: the addressed thing does not exist    |
| invalid_input    | InvalidInputError     | fix the input; retrying the same call fails |
| integrity        | IntegrityError        | stored or supplied data is corrupt          |
| replay_refused   | ReplayRefusedError    | upgrade the reader; do not skip the event   |
| not_supported    | NotSupportedError     | the store declared the capability absent    |
| unauthorized     | UnauthorizedError     | the authorization callback denied access    |
| unavailable      | UnavailableError      | fix the storage (disk, permissions), retry  |
| purged           | PurgedError           | stop: the conversation takes nothing more   |
"""

from __future__ import annotations

from typing import ClassVar


class LedgerError(Exception):
    """Root of every error the ledger raises on purpose (ERR-001).

    ``requirement`` is the spec id of the rule that refused the call.
    """

    kind: ClassVar[str] = "ledger_error"

    def __init__(self, message: str, *, requirement: str) -> None:
        super().__init__(f"{message} [{requirement}]")
        self.message = message
        self.requirement = requirement


class ConflictError(LedgerError):
    """Optimistic concurrency failed: the state differs from what the caller expected.

    ``actual`` carries the value the store holds now (for appends, the head seq).
    """

    kind = "conflict"

    def __init__(self, message: str, *, requirement: str, actual: int | None = None) -> None:
        super().__init__(message, requirement=requirement)
        self.actual = actual


class DuplicateError(LedgerError):
    """An identity that must be unique already exists (for example an eventId)."""

    kind = "duplicate"

    def __init__(self, message: str, *, requirement: str, identity: str) -> None:
        super().__init__(message, requirement=requirement)
        self.identity = identity


class NotFoundError(LedgerError, LookupError):
    """The addressed conversation or object does not exist."""

    kind = "not_found"


class InvalidInputError(LedgerError, ValueError):
    """The input breaks a rule of the spec; ``field`` names the offending part."""

    kind = "invalid_input"

    def __init__(self, message: str, *, requirement: str, field: str = "") -> None:
        super().__init__(message, requirement=requirement)
        self.field = field


class CanonicalJsonError(InvalidInputError):
    """A value or document cannot be canonical JSON (chapter ``canonical-json.md``).

    ``reason`` is one of :data:`CANONICAL_REASONS`.
    """

    def __init__(self, message: str, *, requirement: str, reason: str) -> None:
        super().__init__(message, requirement=requirement, field=reason)
        self.reason = reason


CANONICAL_REASONS = frozenset(
    {
        "bom",
        "duplicate_key",
        "integer_out_of_range",
        "invalid_utf8",
        "lone_surrogate",
        "non_finite_number",
        "non_string_key",
        "syntax",
        "unsupported_type",
    }
)


class IntegrityError(LedgerError):
    """Stored or supplied data contradicts itself (hash, size or sequence mismatch)."""

    kind = "integrity"


class ReplayRefusedError(LedgerError):
    """An envelope of unknown kind or schema version that is not ignorable (RPL-003)."""

    kind = "replay_refused"

    def __init__(
        self,
        message: str,
        *,
        requirement: str,
        conversation_id: str,
        seq: int,
        event_id: str,
        schema_version: int,
        event_kind: str,
    ) -> None:
        super().__init__(message, requirement=requirement)
        self.conversation_id = conversation_id
        self.seq = seq
        self.event_id = event_id
        self.schema_version = schema_version
        self.event_kind = event_kind


class NotSupportedError(LedgerError):
    """The store declared this capability absent and refuses the operation (CAP-002)."""

    kind = "not_supported"

    def __init__(self, message: str, *, requirement: str, capability: str) -> None:
        super().__init__(message, requirement=requirement)
        self.capability = capability


class UnavailableError(LedgerError):
    """The storage cannot serve the call: disk full, read-only file, I/O failure.

    Nothing was written; an operator must fix the environment before a retry
    can succeed (ERR-001).
    """

    kind = "unavailable"


class UnauthorizedError(LedgerError):
    """The authorization callback denied the operation."""

    kind = "unauthorized"


class PurgedError(LedgerError):
    """The conversation was purged and takes no more events, transitions or imports (TRN-092)."""

    kind = "purged"

    def __init__(self, message: str, *, requirement: str, conversation_id: str) -> None:
        super().__init__(message, requirement=requirement)
        self.conversation_id = conversation_id

    @classmethod
    def of(cls, conversation_id: str) -> PurgedError:
        """TRN-092: the refusal of any write to the purged ``conversation_id``."""
        return cls(
            f"conversation {conversation_id!r} was purged",
            requirement="TRN-092",
            conversation_id=conversation_id,
        )


ERROR_KINDS: dict[str, type[LedgerError]] = {
    cls.kind: cls
    for cls in (
        ConflictError,
        DuplicateError,
        NotFoundError,
        InvalidInputError,
        IntegrityError,
        ReplayRefusedError,
        NotSupportedError,
        UnauthorizedError,
        UnavailableError,
        PurgedError,
    )
}
"""The normative error kinds (ERR-001), keyed by kind."""
