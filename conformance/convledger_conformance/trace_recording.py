"""Recording the failure traces of a run (``--record-failures``): one trace vector per failure.

A failed check is run again, with the same seed, to record the operations it
made as a trace vector (:mod:`convledger_conformance.vectors.failures`); the
result's detail then names that vector.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from convledger_conformance.check_failures import printable
from convledger_conformance.registry import Check, CheckContext
from convledger_conformance.results import CheckResult
from convledger_conformance.vectors.failures import trace_of_failure, write_failure


@attrs.define
class Recording:
    """Where a run writes its failure traces, and the first trace of each signature."""

    folder: Path
    store_name: str
    written: dict[str, Path] = attrs.Factory(dict)


def with_recorded_trace(
    result: CheckResult, item: Check, context: CheckContext, *, recording: Recording
) -> CheckResult:
    """``result`` with its detail naming the trace vector its failure was recorded as.

    A failure whose first diverging operation has the signature of a trace this run
    already wrote (the same operation, the same members differing) writes no second
    trace: it names the first, whose failure it most likely follows from.
    """
    recorded = trace_of_failure(item, context, result.failed_ids, store_name=recording.store_name)
    earlier = recording.written.get(recorded.signature) if recorded.signature else None
    path = None
    if earlier is not None:
        line = (f"Trace vector of this failure: {earlier} (the same first divergence, "
                f"{recorded.signature}, as that trace's check: no second trace written; "
                f"{recorded.note})")
    else:
        path = write_failure(recording.folder, recorded)
        line = (
            f"Trace vector of this failure: {path} ({recorded.note})" if path is not None
            else f"No trace vector was recorded: {recorded.note}"
        )
        if path is not None and recorded.signature:
            recording.written[recorded.signature] = path
    return attrs.evolve(
        result, detail=f"{result.detail}\n{printable(line)}\n",
        divergence=printable(recorded.divergence), signature=recorded.signature,
        trace_size=recorded.size if recorded.trace is not None else None,
        trace=str(path or earlier or ""),
    )
