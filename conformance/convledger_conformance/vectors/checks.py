"""Operation-trace vectors (``spec/vectors/traces``): every recorded step, replayed on the store.

One check per trace file, gated by the capability its traces need, covering
the union of the ids its traces name. A trace fails at its first step whose
outcome, error kind or state digest differs from the recording, and reports
the step (see :mod:`convledger_conformance.vectors.traces`). A file whose ``format``
this runner does not know fails every id its traces cover: a vector file is
never silently passed over.
"""

from __future__ import annotations

from typing import Any

from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import fail
from convledger_conformance.vectors.files import consume
from convledger_conformance.vectors.traces import FORMAT, FORMAT_VERSION, replay, trace_files


def _register(name: str, document: dict[str, Any]) -> None:
    traces = document.get("traces", [])
    ids = sorted({item for trace in traces for item in trace["covers"]})
    needed = {Capability(item) for trace in traces for item in trace["capabilities"]}
    capability = next(
        (item for item in (Capability.PURGE, Capability.TRANSITIONS) if item in needed),
        Capability.LEDGER,
    )
    also = tuple(sorted(needed - {capability, Capability.LEDGER}, key=lambda item: item.value))

    def run(ctx: CheckContext) -> None:
        if (document.get("format"), document.get("formatVersion")) != (FORMAT, FORMAT_VERSION):
            fail(ids, f"{name}: unknown trace format {document.get('format')!r}")
        if not traces:
            fail(ids, f"{name}: a trace file holds at least one trace")
        problems = []
        for trace in traces:  # the registry runs this only when every capability is declared
            problems.extend(replay(ctx.factory, trace))
        if problems:
            failed = sorted({
                item for trace in traces for item in trace["covers"]
                if any(problem.startswith(f"{trace['name']} ") for problem in problems)
            })
            fail(failed, "; ".join(problems))

    stem = name.removesuffix(".json").replace("-", "_")
    run.__name__ = f"check_trace_vectors_{stem}"
    run.__doc__ = f"Every step of spec/vectors/traces/{name} answers as recorded."
    check(*ids, capability=capability, also=also)(run)
    consume(f"traces/{name}")


for _name, _document in trace_files().items():
    _register(_name, _document)
