"""Performance figures of any ledger store, as ratios to the raw-SQLite floor of the same run.

Issue 8: absolute times on a shared machine mean little; a store's time next
to the time bare ``sqlite3`` needs for the same work, measured in the same
run and interleaved, does. This package measures, against any
:class:`~convledger.store.LedgerStore` factory:

=======================  ====================================================  ==================
figure id                store call                                            floor (same run)
=======================  ====================================================  ==================
``append.transition``    one runtime transition (accept, acquire, terminal in  raw replay
                         turn), its own transaction
``append.single``        ``append`` of one draft                               raw replay
``append.batch10``       ``append`` of 10 drafts in one call                   raw replay
``append.batch100``      ``append`` of 100 drafts in one call                  raw replay
``read.pageN@S``         ``read`` of N envelopes (LED-007) in a ledger of S    fetch + json.loads
``read.scaling``         ``read`` of 100 at the largest size                   the same at 1e3
``export``               ``export_conversation`` of 1000 events                rfc8785 per event
``import``               ``import_conversation`` of 1000 events                raw replay
``canonical``            ``convledger.fast.canonical.encode`` of an envelope   rfc8785
``memory.append``        ``MemoryStore.append`` of one draft, and of 100        (rate only)
``projection.catch_up``  ``store.catch_up`` when the store has it              (rate only)
``search.own@S``         ``search`` of one word by a conversation of the       raw replay (fetch)
                         ledger, no callback (SRC-010), ledger of S
``search.granted@S``     ``search`` of one word by a reader with no events,    raw replay (fetch)
                         callback granting every tenth conversation (SRC-011)
``search.scaling``,      ``search.own`` / ``search.granted`` at the largest    the same at 1e3
``search.granted.        size
scaling``
=======================  ====================================================  ==================

**Raw replay.** The reference SQLite store runs the same operation on a copy
of the same reference ledger file, opened with a recording connection
(``connection_factory``, :mod:`convledger_bench.recorder`) that logs every
statement; the raw contender then executes exactly those statements, with
exactly those pre-serialized parameters, through bare ``sqlite3`` on another
copy (triggers included: the file's schema is the store's own,
``convledger.sqlite.schema``). That is the physical floor of this schema in
Python. For the reference store itself the ratio says what validation,
encoding and Python objects add; for another store it says how far it is from
what SQLite on this machine can do.

**Fetch + json.loads.** A bounded read's floor is the store's own keyset
statement (``rows.READ_WINDOW``, limit + 1 rows as the store asks) and
``json.loads`` of each payload column: the cheapest way to hand a caller
decoded events.

**Search replay.** A search's floor is the same idea for a read: the
reference SQLite store runs each prepared search once on a
:class:`RecordingConnection` (``BEGIN``, the FTS5 statements of
``convledger.sqlite.search``, ``COMMIT``), and bare ``sqlite3`` runs exactly
those statements with ``fetchall`` (rows fetched, not turned into hits: the
store's own work on top is building ``Hit`` objects, sorting candidate ids
and asking the callback). Search figures are measured only when the store
declares capability ``search``.

Every ratio is ``floor median / store median`` (1.0: as fast as the floor),
except ``read.scaling`` and ``search.*scaling`` (``median at 1e3 / median at
the large size``) and
``export`` (``rfc8785 per event / export per event``). Store and floor run in
rotation, one call each per round (:func:`interleave`), so drift of the
machine hits both; each figure also carries the interquartile spread of its
samples. ``run_bench(factory, quick=True)`` is the entry point; the
conformance CLI's ``--bench`` prints :meth:`BenchReport.table`.

Modules, by concern: :mod:`~convledger_bench.workloads` (realistic events,
ledgers, the operations timed), :mod:`~convledger_bench.recorder` (the store's
statements, through its public ``connection_factory`` and ``connection_hook``),
:mod:`~convledger_bench.floor` (the raw-SQLite replay), :mod:`~convledger_bench.measure`
(the interleaved loop, medians, ratios), :mod:`~convledger_bench.figures` and
:mod:`~convledger_bench.search` (each figure), :mod:`~convledger_bench.report`
and :mod:`~convledger_bench.run` (the whole run). Everything is re-exported here.
The harness depends on ``convledger``; neither ``convledger`` nor the
conformance suite imports it (the suite CLI's ``--bench`` loads it lazily).
"""

from __future__ import annotations

from convledger_bench.beside import Beside
from convledger_bench.figures import (
    PEER_PAGE,
    append_figure,
    append_scaling_figure,
    canonical_figure,
    catch_up_figure,
    export_figure,
    import_figure,
    memory_append_figure,
    read_figure,
    scaling_figure,
    transition_figure,
)
from convledger_bench.floor import Floor, paired, raw_connection, replay
from convledger_bench.measure import (
    FASTEST_PEER,
    MINIMAL,
    PEERS,
    Counter,
    Figure,
    Plan,
    Runner,
    figure,
    interleave,
    median,
    spread,
)
from convledger_bench.minimal import (
    MinimalLedger,
    build_minimal_file,
    event_row,
    minimal_append_operations,
    minimal_archive_operations,
    minimal_transition_operations,
)
from convledger_bench.peers import (
    PEERS_MISSING,
    EventsourcingPeer,
    LanggraphPeer,
    build_eventsourcing_file,
    build_langgraph_file,
    peers_missing,
)
from convledger_bench.recorder import (
    RecordingConnection,
    Statement,
    recording,
    recording_store,
)
from convledger_bench.report import BenchReport, machine
from convledger_bench.run import run_bench
from convledger_bench.search import (
    SEARCH_LIMIT,
    SEARCH_MODES,
    SEARCH_READER,
    SEARCH_WORDS,
    SearchFloor,
    SearchQuery,
    every_tenth,
    search_figure,
    search_queries,
    search_rounds,
    search_scaling_figure,
    searchable,
)
from convledger_bench.workloads import (
    APPENDS,
    FILL_TURN,
    OCCURRED_AT,
    PER_CONVERSATION,
    READ_PAGES,
    Operation,
    PlannedTransition,
    append_operations,
    archive_operations,
    build_reference_file,
    conversation_name,
    conversations_of,
    copy_ledger,
    draft,
    event_id,
    fill,
    fill_plan,
    payload,
    plan_transitions,
    reference_file,
    transition_operations,
    workload_key,
)

__all__ = [
    "APPENDS",
    "FASTEST_PEER",
    "FILL_TURN",
    "MINIMAL",
    "OCCURRED_AT",
    "PEERS",
    "PEERS_MISSING",
    "PEER_PAGE",
    "PER_CONVERSATION",
    "READ_PAGES",
    "SEARCH_LIMIT",
    "SEARCH_MODES",
    "SEARCH_READER",
    "SEARCH_WORDS",
    "BenchReport",
    "Beside",
    "Counter",
    "EventsourcingPeer",
    "Figure",
    "Floor",
    "LanggraphPeer",
    "MinimalLedger",
    "Operation",
    "Plan",
    "PlannedTransition",
    "RecordingConnection",
    "Runner",
    "SearchFloor",
    "SearchQuery",
    "Statement",
    "append_figure",
    "append_operations",
    "append_scaling_figure",
    "archive_operations",
    "build_eventsourcing_file",
    "build_langgraph_file",
    "build_minimal_file",
    "build_reference_file",
    "canonical_figure",
    "catch_up_figure",
    "conversation_name",
    "conversations_of",
    "copy_ledger",
    "draft",
    "event_id",
    "event_row",
    "every_tenth",
    "export_figure",
    "figure",
    "fill",
    "fill_plan",
    "import_figure",
    "interleave",
    "machine",
    "median",
    "memory_append_figure",
    "minimal_append_operations",
    "minimal_archive_operations",
    "minimal_transition_operations",
    "paired",
    "payload",
    "peers_missing",
    "plan_transitions",
    "raw_connection",
    "read_figure",
    "recording",
    "recording_store",
    "reference_file",
    "replay",
    "run_bench",
    "scaling_figure",
    "search_figure",
    "search_queries",
    "search_rounds",
    "search_scaling_figure",
    "searchable",
    "spread",
    "transition_figure",
    "transition_operations",
    "workload_key",
]
