"""The request table of the wire protocol: one handler per store operation (``wire.md``).

:data:`OPERATIONS` maps each request type the protocol carries to the
capability it belongs to and the handler that decodes its arguments, calls
the store and encodes the result (WIR-013, WIR-015 .. WIR-018). It is derived
from the one capability table, :data:`convledger.capabilities.OPERATIONS`:
every operation marked as carried must have a handler in :data:`HANDLERS`.
Arguments reach the store as they came (:func:`member`): the store refuses
an ill-typed one exactly as it does in process (WIR-013).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from convledger.capabilities import OPERATIONS as CAPABILITY_OPERATIONS
from convledger.capabilities import Capability
from convledger.interface import EveryOperation
from convledger.projections.named import resolve
from convledger.store_interface import LedgerStore
from convledger.wire import values
from convledger.wire.ledger_values import wire_drafts_in

Handler = Callable[[EveryOperation, dict[str, Any]], object]


@attrs.frozen
class Entry:
    """One request type of the operation table."""

    capability: Capability
    handler: Handler


def _kwargs(args: dict[str, Any], *names: tuple[str, str]) -> dict[str, Any]:
    """The keyword arguments of the wire members present in ``args`` (absent: the default)."""
    return {python: args[wire] for wire, python in names if wire in args}


def _append(store: EveryOperation, args: dict[str, Any]) -> object:
    placed = store.append(
        member(args, "conversationId"),
        wire_drafts_in(member(args, "drafts")),  # type: ignore[arg-type]  # WIR-044
        **_kwargs(args, ("expectedHead", "expected_head")),
    )
    return [values.envelope_out(envelope) for envelope in placed]


def _read(store: EveryOperation, args: dict[str, Any]) -> object:
    page = store.read(
        member(args, "conversationId"),
        **_kwargs(args, ("fromSeq", "from_seq"), ("toSeq", "to_seq"), ("limit", "limit")),
    )
    return values.page_out(page)


def member(args: dict[str, Any], name: str) -> Any:
    """A request member as it came, unchecked: the store refuses an ill-typed one."""
    return args.get(name)


def _conversation(args: dict[str, Any]) -> Any:
    return member(args, "conversationId")


def _transition(store: EveryOperation, args: dict[str, Any]) -> object:
    outcome = store.transition(
        _conversation(args),
        values.transition_in(member(args, "transition")),  # type: ignore[arg-type]
        event_id=member(args, "eventId"),
        occurred_at=member(args, "occurredAt"),
    )
    return values.outcome_out(outcome)


def _scan(store: EveryOperation, args: dict[str, Any]) -> object:
    kwargs = _kwargs(args, ("limit", "limit"))
    if "after" in args:
        kwargs["after"] = values.cursor_in(args["after"])
    return values.recovery_page_out(store.scan_recoverable(**kwargs))


def _authorize(args: dict[str, Any]) -> Any:
    """WIR-030: the callback the server put in place of ``true``, or the value as it came."""
    return member(args, "authorize")


def _put_spill(store: EveryOperation, args: dict[str, Any]) -> object:
    # An absent required member reaches the store as null and is refused there (WIR-049:
    # never a TypeError of a missing keyword answered as internal).
    metadata = store.put_spill(
        _conversation(args),
        member(args, "data"),
        media_type=member(args, "mediaType"),
        operation=member(args, "operation"),
        reference=member(args, "reference"),
        event_id=member(args, "eventId"),
        occurred_at=member(args, "occurredAt"),
    )
    return values.metadata_out(metadata)


def _get_spill(store: EveryOperation, args: dict[str, Any]) -> object:
    return store.get_spill(
        _conversation(args), member(args, "reference"), authorize=_authorize(args)
    )


def _delete_spill(store: EveryOperation, args: dict[str, Any]) -> object:
    envelope = store.delete_spill(
        _conversation(args),
        member(args, "reference"),
        event_id=member(args, "eventId"),
        occurred_at=member(args, "occurredAt"),
        **_kwargs(args, ("reason", "reason")),
    )
    return values.envelope_out(envelope)


def _search(store: EveryOperation, args: dict[str, Any]) -> object:
    kwargs = _kwargs(args, ("scope", "scope"), ("limit", "limit"))
    hits = store.search(
        member(args, "requester"), member(args, "query"), authorize=_authorize(args), **kwargs
    )
    return [values.hit_out(hit) for hit in hits]


def resolve_fold(name: object, version: object) -> object:
    """WIR-018: the fold a definition names, from the table of named folds, or None."""
    return resolve(name, version)


def _definitions(args: dict[str, Any]) -> dict[str, Any]:
    """``projections``, when present: each definition resolved (WIR-018)."""
    if "projections" not in args:
        return {}
    given = args["projections"]
    if not isinstance(given, list):
        return {"projections": given}
    return {"projections": [values.definition_in(item, resolve_fold) for item in given]}


def _catch_up(store: EveryOperation, args: dict[str, Any]) -> object:
    checkpoint = store.catch_up(
        _conversation(args),
        values.definition_in(member(args, "definition"), resolve_fold),  # type: ignore[arg-type]
        **_kwargs(args, ("maxEvents", "max_events")),
    )
    return values.checkpoint_out(checkpoint)


def _import_conversation(store: EveryOperation, args: dict[str, Any]) -> object:
    # WIR-014: the archive as it came; a store refuses anything but bytes (ARC-003).
    report = store.import_conversation(member(args, "archive"), **_definitions(args))
    return values.import_report_out(report)


def _import_bundle(store: EveryOperation, args: dict[str, Any]) -> object:
    report = store.import_bundle(member(args, "bundle"), **_definitions(args))
    return values.import_report_out(report)


HANDLERS: Final[dict[str, Handler]] = {
    "append": _append,
    "read": _read,
    "head": lambda s, a: s.head(_conversation(a)),
    "exportConversation": lambda s, a: s.export_conversation(_conversation(a)),
    "importConversation": _import_conversation,
    "transition": _transition,
    "loadRun": lambda s, a: values.run_out(s.load_run(_conversation(a), member(a, "runId"))),
    "listActiveRuns": lambda s, a: [
        values.run_out(run) for run in s.list_active_runs(_conversation(a))
    ],
    "loadSnapshot": lambda s, a: values.snapshot_out(s.load_snapshot(_conversation(a))),
    "scanRecoverable": _scan,
    "purge": lambda s, a: s.purge(_conversation(a)).value,
    "putSpill": _put_spill,
    "getSpill": _get_spill,
    "deleteSpill": _delete_spill,
    "exportBundle": lambda s, a: s.export_bundle(_conversation(a)),
    "importBundle": _import_bundle,
    "search": _search,
    "catchUp": _catch_up,
    "loadCheckpoint": lambda s, a: values.checkpoint_out(
        s.load_checkpoint(_conversation(a), member(a, "name"))
    ),
    "projectionStatus": lambda s, a: values.status_out(
        s.projection_status(_conversation(a), member(a, "name"))
    ),
}
"""How each request type decodes its arguments, calls the store and encodes the result."""

SERVER_REQUESTS: Final = frozenset({"hello", "newStore", "reopen", "close", "capabilities"})
"""The requests the server answers itself; ``reopen`` is capability ``persistence``'s."""


def _operation_table() -> dict[str, Entry]:
    """WIR-013: the capability table's operations the protocol carries, each with its handler."""
    table = {
        operation.name: Entry(capability, HANDLERS[operation.name])
        for capability, operations in CAPABILITY_OPERATIONS.items()
        for operation in operations
        if operation.wire and operation.name not in SERVER_REQUESTS
    }
    if set(table) != set(HANDLERS):
        raise AssertionError(f"handlers {sorted(set(HANDLERS) ^ set(table))} are not in the table")
    return table


OPERATIONS: Final[dict[str, Entry]] = _operation_table()
"""WIR-013, WIR-015 .. WIR-018: the store operations the protocol carries, by request type.

Derived from :data:`convledger.capabilities.OPERATIONS`, the one capability
table: every operation marked ``wire`` has a handler here, and
``newStore``, ``reopen``, ``close``, ``capabilities`` and ``hello`` are
handled by the server itself.
"""

CARRIED: Final = frozenset(
    capability
    for capability, operations in CAPABILITY_OPERATIONS.items()
    if operations and all(operation.wire for operation in operations)
)
"""WIR-021: the capabilities whose every operation the protocol carries."""


def declared_over_wire(store: LedgerStore) -> list[str]:
    """The store's declaration without the capabilities the protocol cannot serve (WIR-021)."""
    return sorted(item.value for item in store.capabilities if item in CARRIED)
