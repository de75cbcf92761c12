"""Values on the wire (chapter ``wire.md``, WIR-008 .. WIR-018).

Both directions of every mapping between the store interface's Python values
and the CBOR data model, so the server (:mod:`convledger.wire.server`) and the
conformance suite's client proxy cannot disagree:

* a JSON value (payloads, transition inputs) travels as its CBOR image:
  objects as maps with text keys, arrays, text, booleans, null, integers as
  CBOR integers and every other number as a CBOR float (WIR-011);
* an envelope travels as its ENV-001 wire object, a draft as the same members
  without ``conversationId`` and ``seq`` and with ``ignorable`` always present
  (WIR-012);
* runtime records travel in the ``to_json`` wire forms of
  :mod:`convledger.runtime.records` (WIR-015);
* a refusal travels as ``{kind, message, requirement?, details?}`` (WIR-008).

Decoders of requests never validate: the store behind the server does, so an
ill-typed argument reaches it and is refused there exactly as in process.
Decoders of replies are strict: a reply that is not the form this package
writes raises :class:`ReplyError`, never a store error (WIR-009).

This module is the one place to import them from; it defines nothing itself
and re-exports the three modules that hold them:

=====================================  ==========================================
module                                 what lives there
=====================================  ==========================================
:mod:`~convledger.wire.ledger_values`  :class:`Unencodable`, :class:`ReplyError`,
                                       ``INTERNAL``; JSON values (WIR-011);
                                       drafts, envelopes, pages, import reports
                                       (WIR-012, WIR-013); refusals (WIR-008);
                                       the reply shape checks
:mod:`~convledger.wire.runtime_values` transitions, outcomes, runs, snapshots,
                                       recovery cursors and pages, purge
                                       outcomes (WIR-015)
:mod:`~convledger.wire.extended_values`
                                       spill metadata and bytes (WIR-016),
                                       search hits (WIR-017), projection
                                       definitions, checkpoints and statuses
                                       (WIR-018)
=====================================  ==========================================
"""

from __future__ import annotations

from convledger.wire.extended_values import (
    DEFINITION_MEMBERS,
    bytes_in,
    checkpoint_in,
    checkpoint_out,
    definition_in,
    definition_out,
    hit_out,
    hits_in,
    metadata_in,
    metadata_out,
    status_in,
    status_out,
)
from convledger.wire.ledger_values import (
    INTERNAL,
    MAX_DEPTH,
    ReplyError,
    Unencodable,
    draft_in,
    draft_out,
    drafts_in,
    drafts_out,
    envelope_in,
    envelope_out,
    envelopes_in,
    error_in,
    error_out,
    import_report_in,
    import_report_out,
    page_in,
    page_out,
    reply_list,
    reply_map,
    value_out,
)
from convledger.wire.runtime_values import (
    UnknownTransition,
    admitted_out,
    cursor_in,
    cursor_out,
    outcome_in,
    outcome_out,
    purge_in,
    recovery_page_in,
    recovery_page_out,
    run_in,
    run_out,
    runs_in,
    snapshot_in,
    snapshot_out,
    transition_in,
    transition_out,
)

__all__ = [
    "DEFINITION_MEMBERS",
    "INTERNAL",
    "MAX_DEPTH",
    "ReplyError",
    "Unencodable",
    "UnknownTransition",
    "admitted_out",
    "bytes_in",
    "checkpoint_in",
    "checkpoint_out",
    "cursor_in",
    "cursor_out",
    "definition_in",
    "definition_out",
    "draft_in",
    "draft_out",
    "drafts_in",
    "drafts_out",
    "envelope_in",
    "envelope_out",
    "envelopes_in",
    "error_in",
    "error_out",
    "hit_out",
    "hits_in",
    "import_report_in",
    "import_report_out",
    "metadata_in",
    "metadata_out",
    "outcome_in",
    "outcome_out",
    "page_in",
    "page_out",
    "purge_in",
    "recovery_page_in",
    "recovery_page_out",
    "reply_list",
    "reply_map",
    "run_in",
    "run_out",
    "runs_in",
    "snapshot_in",
    "snapshot_out",
    "status_in",
    "status_out",
    "transition_in",
    "transition_out",
    "value_out",
]
