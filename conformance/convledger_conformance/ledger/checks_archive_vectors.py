"""Archive vectors (``spec/vectors/archives/cases.json``): import each archive into a fresh store.

A valid case must import and re-export to its exact bytes; an invalid one must
be refused with its recorded error kind. Cases are split by the capability
they need, one check each, so a store that does not declare ``transitions``
is neither asked to import runtime companions nor credited for TRN ids.
"""

from __future__ import annotations

from typing import Any

from convledger.store import Capability
from convledger_conformance.ledger.archive_cases import FORMAT, FORMAT_VERSION, replay, shipped
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import fail
from convledger_conformance.vectors.files import consume


def _register(capability: Capability, cases: list[dict[str, Any]]) -> None:
    ids = sorted({item for case in cases for item in case["covers"]})

    def run(ctx: CheckContext) -> None:
        problems = {case["name"]: replay(ctx.factory, case) for case in cases}
        failed = {name: problem for name, problem in problems.items() if problem}
        if failed:
            named = sorted({
                item for case in cases if case["name"] in failed for item in case["covers"]
            })
            fail(named, "; ".join(str(problem) for problem in failed.values()))

    run.__name__ = f"check_archive_vectors_{capability.value}"
    run.__doc__ = f"Archive cases needing {capability.value!r} import or are refused as recorded."
    check(*ids, capability=capability)(run)


def _load() -> None:
    document = shipped()
    if (document.get("format"), document.get("formatVersion")) != (FORMAT, FORMAT_VERSION):
        raise ValueError("spec/vectors/archives/cases.json has an unknown format")
    by_capability: dict[Capability, list[dict[str, Any]]] = {}
    for case in document["cases"]:
        (capability,) = {Capability(item) for item in case["capabilities"]}
        by_capability.setdefault(capability, []).append(case)
    for capability, cases in by_capability.items():
        _register(capability, cases)
    consume("archives/cases.json")


_load()
