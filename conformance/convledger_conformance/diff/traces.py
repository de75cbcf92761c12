"""Shrunk disagreements as trace vectors (``transport: frames``), and their replay.

A frames trace holds, per step, what was sent (tagged JSON,
:mod:`~convledger_conformance.diff.values`), how callbacks were answered, the
step's conversation and, as expectations, the reference's normalized frames
and state digest; ``convledger-conformance replay`` runs it on a fresh server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from convledger_conformance.diff.engine import Session, first_difference, member_at, observe
from convledger_conformance.diff.generate import Step
from convledger_conformance.diff.peers import Peer
from convledger_conformance.diff.values import from_tagged, to_tagged
from convledger_conformance.vectors.traces import FORMAT, FORMAT_VERSION

LEAD: Final = ("A disagreement is a lead, not a verdict: the spec (spec/, by the ids named) "
               "decides which answer is right, and a point no sentence decides is a spec gap.")
TRANSPORT: Final = "frames"

_CAPABILITY_OF = {
    "transition": "transitions", "loadRun": "transitions", "listActiveRuns": "transitions",
    "loadSnapshot": "transitions", "scanRecoverable": "transitions", "purge": "purge",
    "catchUp": "projections", "loadCheckpoint": "projections", "projectionStatus": "projections",
    "putSpill": "spills", "getSpill": "spills", "search": "search",
}


def frames_trace(name: str, steps: Sequence[Step], seen: Sequence[Any]) -> dict[str, Any]:
    """A trace vector of ``steps`` (``transport: frames``), expecting the reference's answers."""
    written = []
    for step, observed in zip(steps, seen, strict=True):
        entry: dict[str, Any] = {
            "op": "frame", "request": step.op, "family": step.family,
            "send": to_tagged(step.send), "callbacks": step.callbacks,
            "conversationId": step.conversation,
        }
        if observed is not None and "frames" in observed:
            entry["expect"] = observed["frames"]
            entry["digest"] = observed["digest"]
        elif observed is not None:
            entry["expect"] = observed
        written.append(entry)
    needed = sorted({_CAPABILITY_OF[step.op] for step in steps if step.op in _CAPABILITY_OF})
    covers = sorted({item for step in steps for item in step.ids})
    return {"name": f"diff-{name}", "covers": covers, "capabilities": needed or ["ledger"],
            "transport": TRANSPORT, "steps": written}


def record(folder: Path, items: Iterable[tuple[str, str, dict[str, Any]]]) -> dict[str, str]:
    """Write each disagreement's trace; the file of each case."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for case, op, trace in items:
        document = {
            "$comment": "A disagreement found by `convledger-conformance diff`: the steps, "
            "shrunk, with the reference store's answers as expectations. " + LEAD,
            "format": FORMAT, "formatVersion": FORMAT_VERSION, "traces": [trace],
        }
        path = folder / f"diff-{case}-{op or 'request'}.json"
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
        files[case] = str(path)
    return files



def replay_frames(peer: Peer, trace: dict[str, Any]) -> list[str]:
    """Run a ``transport: frames`` trace on a fresh server; the first mismatch, described."""
    session = Session(peer)
    try:
        for number, entry in enumerate(trace["steps"], start=1):
            step = Step(entry.get("family", "plain"), entry.get("request", ""),
                        from_tagged(entry["send"]), entry.get("callbacks", "deny"),
                        entry.get("conversationId"))
            observed = observe(session, step)
            if "expect" not in entry:
                continue
            expected = ({"frames": entry["expect"], "digest": entry.get("digest")}
                        if isinstance(entry["expect"], list) else entry["expect"])
            path = first_difference(expected, observed)
            if path is not None:
                return [f"{trace['name']} step {number} ({step.op}): {path}: expected "
                        f"{_short(member_at(expected, path))}, got "
                        f"{_short(member_at(observed, path))}"]
    finally:
        peer.close()
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "..."
