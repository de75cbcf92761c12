""":class:`WireStore`: one store of a wire server behind the store interface (WIR-013, WIR-015).

Each method of the store interface is one request over a
:class:`~convledger_conformance.wire.connection.WireConnection`, naming the
store's handle (WIR-020); refusals come back as the typed errors of
:mod:`convledger.errors`, built from the normative kind (WIR-008). A value
that has no CBOR image cannot be sent; the store refuses it with
``invalid_input`` itself (WIR-011). Arguments and replies are translated by
:mod:`convledger_conformance.wire.store_values`.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final

from convledger.canonical import JsonValue
from convledger.capabilities import not_supported
from convledger.envelope import Envelope, EventDraft
from convledger.handles import StoreLocator
from convledger.host.rows import Appends, ChildLink, FactRow, ScheduleRow
from convledger.kinds import KindRegistry, default_registry
from convledger.projections.definition import Checkpoint as ProjectionCheckpoint
from convledger.projections.definition import ProjectionDefinition, ProjectionStatus
from convledger.runtime.operations import PurgeOutcome, RecoveryCursor, RecoveryPage
from convledger.runtime.records import Run
from convledger.runtime.state import Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.search.operations import Hit
from convledger.spills.objects import Authorize, SpillMetadata
from convledger.store import Capability, ImportReport, LedgerStore, Page
from convledger.wire import values
from convledger_conformance.wire.connection import WireConnection, WireError, WireProtocolError
from convledger_conformance.wire.store_values import (
    _authorize_out,
    _best_effort,
    _callback,
    _camel,
    _capabilities,
    _definition_out,
    _projections_out,
    _refuse_unencodable,
    _reply,
)


class Omitted(enum.Enum):
    """An argument the caller left out: its request carries no member for it."""

    OMITTED = "omitted"


OMITTED: Final = Omitted.OMITTED
"""The default of every defaulted integer argument of :class:`WireStore`.

The server's store then applies its own default, and the suite checks that
default against the spec's (``defaults`` of ``spec/limits.json``, WIR-013)
instead of sending the reference's value every time.
"""


def _given(**members: object) -> dict[str, Any]:
    """The members whose argument the caller gave, as wire values."""
    return {name: values.value_out(item) for name, item in members.items()
            if item is not OMITTED}


class WireStore:
    """One store of a server, behind the store interface (WIR-013, WIR-015)."""

    def __init__(self, connection: WireConnection, created: object) -> None:
        if not isinstance(created, dict) or not isinstance(created.get("store"), int):
            raise WireProtocolError(f"newStore answered {created!r}")
        self._connection = connection
        self.handle: int = created["store"]
        self._capabilities = _capabilities(created.get("capabilities"))
        self._registry = default_registry()
        self._closed = False

    def _call(
        self,
        op: str,
        build: Callable[[], dict[str, Any]] = dict,
        *,
        callback: Callable[[Any], object] | None = None,
    ) -> Any:
        args = _refuse_unencodable(build)
        args["store"] = self.handle
        return self._connection.request(op, args, callback=callback)

    @property
    def connection(self) -> WireConnection:
        """The connection to the server this store lives in."""
        return self._connection

    @property
    def declared_limits(self) -> dict[str, int]:
        """LIM-010: the limits the server's hello declared (member ``limits``), else none."""
        declared = self._connection.hello.get("limits")
        return dict(declared) if isinstance(declared, dict) else {}

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The declaration ``newStore`` returned (CAP-001, WIR-021)."""
        return self._capabilities

    @property
    def registry(self) -> KindRegistry:
        """The registry of ``kinds.json`` of the spec version the server announced (WIR-022)."""
        return self._registry

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        """``append`` (WIR-013, WIR-015)."""

        def build() -> dict[str, Any]:
            args = {
                "conversationId": values.value_out(conversation_id),
                "drafts": values.drafts_out(drafts),
            }
            if expected_head is not None:
                args["expectedHead"] = values.value_out(expected_head)
            return args

        return _reply(values.envelopes_in, self._call("append", build))

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int | Omitted = OMITTED,
        to_seq: int | None = None,
        limit: int | Omitted = OMITTED,
    ) -> Page:
        """``read``: the arguments given travel, the server's defaults fill the rest (WIR-013)."""

        def build() -> dict[str, Any]:
            args = {
                "conversationId": values.value_out(conversation_id),
                **_given(fromSeq=from_seq, limit=limit),
            }
            if to_seq is not None:
                args["toSeq"] = values.value_out(to_seq)
            return args

        return _reply(values.page_in, self._call("read", build))

    def _conversation_call(self, op: str, conversation_id: object, **extra: object) -> Any:
        def build() -> dict[str, Any]:
            args = {"conversationId": values.value_out(conversation_id)}
            args.update({key: values.value_out(item) for key, item in extra.items()})
            return args

        return self._call(op, build)

    def head(self, conversation_id: str) -> int:
        """``head``."""
        value = self._conversation_call("head", conversation_id)
        if isinstance(value, bool) or not isinstance(value, int):
            raise WireProtocolError(f"head answered {value!r}")
        return value

    def export_conversation(self, conversation_id: str) -> bytes:
        """``exportConversation``: the archive travels as a CBOR byte string."""
        value = self._conversation_call("exportConversation", conversation_id)
        if not isinstance(value, bytes):
            raise WireProtocolError(f"exportConversation answered a {type(value).__name__}")
        return value

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """``importConversation``; definitions travel with their folds by name (WIR-018)."""
        value = self._call("importConversation", lambda: {
            "archive": values.value_out(archive), **_projections_out(projections),
        })
        return _reply(values.import_report_in, value)

    def catch_up(
        self,
        conversation_id: str,
        definition: ProjectionDefinition,
        *,
        max_events: int | Omitted = OMITTED,
    ) -> ProjectionCheckpoint:
        """``catchUp``: the definition travels with its fold by name (WIR-018)."""
        value = self._call("catchUp", lambda: {
            "conversationId": values.value_out(conversation_id),
            "definition": _definition_out(definition),
            **_given(maxEvents=max_events),
        })
        checkpoint = _reply(values.checkpoint_in, value)
        if checkpoint is None:
            raise WireProtocolError("catchUp answered null")
        return checkpoint

    def load_checkpoint(self, conversation_id: str, name: str) -> ProjectionCheckpoint | None:
        """``loadCheckpoint``."""
        value = self._conversation_call("loadCheckpoint", conversation_id, name=name)
        return _reply(values.checkpoint_in, value)

    def projection_status(self, conversation_id: str, name: str) -> ProjectionStatus:
        """``projectionStatus``."""
        value = self._conversation_call("projectionStatus", conversation_id, name=name)
        return _reply(values.status_in, value)

    def reopen(self) -> LedgerStore:
        """``reopen``: this handle closes, the returned one sees the same data."""
        created = self._call("reopen")
        self._closed = True
        store: LedgerStore = WireStore(self._connection, created)
        return store

    def transition(
        self, conversation_id: str, transition: Transition, *, event_id: str, occurred_at: str
    ) -> Outcome:
        """``transition``: the transition travels as ``{type, input}`` (WIR-015)."""
        value = self._call("transition", lambda: {
            "conversationId": values.value_out(conversation_id),
            "transition": values.transition_out(transition),
            "eventId": values.value_out(event_id),
            "occurredAt": values.value_out(occurred_at),
        })
        return _reply(values.outcome_in, value)

    def load_run(self, conversation_id: str, run_id: str) -> Run | None:
        """``loadRun``."""
        return _reply(values.run_in, self._conversation_call("loadRun", conversation_id,
                                                             runId=run_id))

    def list_active_runs(self, conversation_id: str) -> tuple[Run, ...]:
        """``listActiveRuns``."""
        return _reply(values.runs_in, self._conversation_call("listActiveRuns", conversation_id))

    def load_snapshot(self, conversation_id: str) -> Snapshot:
        """``loadSnapshot``."""
        return _reply(values.snapshot_in, self._conversation_call("loadSnapshot", conversation_id))

    def scan_recoverable(
        self, *, after: RecoveryCursor | None = None, limit: int | Omitted = OMITTED
    ) -> RecoveryPage:
        """``scanRecoverable``."""

        def build() -> dict[str, Any]:
            args = _given(limit=limit)
            if after is not None:
                args["after"] = values.cursor_out(after)
            return args

        return _reply(values.recovery_page_in, self._call("scanRecoverable", build))

    def purge(self, conversation_id: str) -> PurgeOutcome:
        """``purge``."""
        return _reply(values.purge_in, self._conversation_call("purge", conversation_id))

    def put_spill(
        self,
        conversation_id: str,
        data: bytes,
        *,
        media_type: str,
        operation: dict[str, JsonValue],
        reference: str,
        event_id: str,
        occurred_at: str,
    ) -> SpillMetadata:
        """``putSpill``: the data travels as a CBOR byte string (WIR-016)."""
        value = self._call("putSpill", lambda: {
            "conversationId": values.value_out(conversation_id),
            "data": values.value_out(data),
            "mediaType": values.value_out(media_type),
            "operation": values.value_out(operation),
            "reference": values.value_out(reference),
            "eventId": values.value_out(event_id),
            "occurredAt": values.value_out(occurred_at),
        })
        return _reply(values.metadata_in, value)

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        """``getSpill``: the server asks ``authorize`` back about the descriptor (WIR-030)."""
        value = self._call("getSpill", lambda: {
            "conversationId": values.value_out(conversation_id),
            "reference": values.value_out(reference),
            **_authorize_out(authorize),
        }, callback=_callback(authorize))
        return _reply(partial(values.bytes_in, what="getSpill"), value)

    def delete_spill(
        self,
        conversation_id: str,
        reference: str,
        *,
        reason: str = "deleted",
        event_id: str,
        occurred_at: str,
    ) -> Envelope:
        """``deleteSpill``: every argument travels, the default reason included."""
        value = self._call("deleteSpill", lambda: {
            "conversationId": values.value_out(conversation_id),
            "reference": values.value_out(reference),
            "reason": values.value_out(reason),
            "eventId": values.value_out(event_id),
            "occurredAt": values.value_out(occurred_at),
        })
        return _reply(values.envelope_in, value)

    def export_bundle(self, conversation_id: str) -> bytes:
        """``exportBundle``: the bundle travels as a CBOR byte string (WIR-016)."""
        value = self._conversation_call("exportBundle", conversation_id)
        return _reply(partial(values.bytes_in, what="exportBundle"), value)

    def import_bundle(
        self, bundle: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """``importBundle``; definitions travel with their folds by name (WIR-018)."""
        value = self._call("importBundle", lambda: {
            "bundle": values.value_out(bundle), **_projections_out(projections),
        })
        return _reply(values.import_report_in, value)

    def search(
        self,
        requester: str,
        query: str,
        *,
        scope: Sequence[str] | None = None,
        limit: int | Omitted = OMITTED,
        authorize: Callable[[str], bool] | None = None,
    ) -> tuple[Hit, ...]:
        """``search``: the server asks ``authorize`` back per foreign conversation (WIR-030)."""

        def build() -> dict[str, Any]:
            args = {
                "requester": values.value_out(requester),
                "query": values.value_out(query),
                **_given(limit=limit),
                **_authorize_out(authorize),
            }
            if scope is not None:
                args["scope"] = values.value_out(scope)
            return args

        value = self._call("search", build, callback=_callback(authorize))
        return _reply(values.hits_in, value)

    def write_fact_rows(
        self, row: FactRow, appends: Appends, *, skip_purged: bool = False
    ) -> tuple[str, ...]:
        """Refused: the wire protocol carries no fact rows (WIR-021)."""
        raise not_supported(Capability.FACT_ROWS, "write_fact_rows")

    def child_links(self, parent_conversation_id: str) -> tuple[ChildLink, ...]:
        """Refused: the wire protocol carries no fact rows (WIR-021)."""
        raise not_supported(Capability.FACT_ROWS, "child_links")

    def schedules(self, conversation_id: str) -> tuple[ScheduleRow, ...]:
        """Refused: the wire protocol carries no fact rows (WIR-021)."""
        raise not_supported(Capability.FACT_ROWS, "schedules")

    def open_handle(self) -> LedgerStore:
        """Refused: the wire protocol carries no other handles (WIR-021)."""
        raise not_supported(Capability.MULTI_PROCESS, "open_handle")

    def locator(self) -> StoreLocator:
        """Refused: the wire protocol carries no locators (WIR-021)."""
        raise not_supported(Capability.MULTI_PROCESS, "locator")

    def close(self) -> None:
        """``close``; a no-op once closed or when the server is already gone."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(WireError):
            self._call("close")

    def __getattr__(self, name: str) -> Callable[..., object]:
        """An operation the proxy does not know: sent as its camelCase request (WIR-007).

        A server that does not carry it answers ``not_supported``; positional
        arguments travel in ``args``, keyword arguments under their camelCase names,
        each as null when it has no CBOR image.
        """
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*positional: object, **keywords: object) -> object:
            def build() -> dict[str, Any]:
                args: dict[str, Any] = {"args": [_best_effort(item) for item in positional]}
                for key, item in keywords.items():
                    args[_camel(key)] = _best_effort(item)
                return args

            return self._call(_camel(name), build)

        return call

    def __repr__(self) -> str:
        return f"WireStore(handle={self.handle})"
