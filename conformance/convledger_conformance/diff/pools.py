"""The pools the differential generator draws from (:mod:`~convledger_conformance.diff.generate`).

The shipped trace vectors as wire requests, hostile values, CBOR items that
WIR-003 excludes, malformed frame bodies, odd first requests, and the spec ids
each family of steps and each request exercises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import cbor2

from convledger_conformance.vectors.traces import capabilities_of, iter_traces, trace_files

# -- the shipped trace vectors as wire requests ----------------------------------------------

_HARVEST: dict[str, Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]] = {
    "transition": lambda s: ("transition", {
        "conversationId": s["conversationId"],
        "transition": {"type": s["type"], "input": s["input"]},
        "eventId": s["eventId"], "occurredAt": s["occurredAt"]}),
    "append": lambda s: ("append", {
        "conversationId": s["conversationId"], "drafts": s["drafts"],
        **({"expectedHead": s["expectedHead"]} if "expectedHead" in s else {})}),
    "purge": lambda s: ("purge", {"conversationId": s["conversationId"]}),
    "listActiveRuns": lambda s: ("listActiveRuns", {"conversationId": s["conversationId"]}),
    "loadSnapshot": lambda s: ("loadSnapshot", {"conversationId": s["conversationId"]}),
    "loadRun": lambda s: ("loadRun", {"conversationId": s["conversationId"],
                                      "runId": s["runId"]}),
    "scanRecoverable": lambda s: ("scanRecoverable", {
        **({} if s.get("after") is None else {
            "after": {"conversationId": s["after"][0], "ordinal": s["after"][1]}}),
        "limit": s["limit"]}),
    "roundTrip": lambda s: ("exportConversation", {"conversationId": s["conversationId"]}),
    "read": lambda s: ("read", {
        "conversationId": s["conversationId"], "fromSeq": s["fromSeq"], "limit": s["limit"],
        **({"toSeq": s["toSeq"]} if "toSeq" in s else {})}),
    "head": lambda s: ("head", {"conversationId": s["conversationId"]}),
    "import": lambda s: ("importConversation", {"archive": s["archive"].encode("utf-8")}),
    "catchUp": lambda s: ("catchUp", {
        "conversationId": s["conversationId"], "definition": s["definition"],
        **({"maxEvents": s["maxEvents"]} if "maxEvents" in s else {})}),
    "loadCheckpoint": lambda s: ("loadCheckpoint", {"conversationId": s["conversationId"],
                                                    "name": s["name"]}),
    "projectionStatus": lambda s: ("projectionStatus", {
        "conversationId": s["conversationId"], "name": s["name"]}),
}


@attrs.frozen
class Script:
    """One shipped trace as wire requests: (op, args, conversation) per step."""

    name: str
    capabilities: frozenset[str]
    requests: tuple[tuple[str, dict[str, Any], str | None], ...]


def scripts() -> list[Script]:
    """Every shipped trace vector, translated to wire requests."""
    found = []
    for _, trace in iter_traces(trace_files()):
        steps = [{k: v for k, v in step.items() if k not in ("expect", "digest")}
                 for step in trace["steps"]]
        requests = tuple((*_HARVEST[step["op"]](step), step.get("conversationId"))
                         for step in steps)
        found.append(Script(trace["name"], frozenset(capabilities_of(steps)) - {"ledger"},
                            requests))
    return found


# -- the generator ---------------------------------------------------------------------------

HOSTILE: tuple[Any, ...] = (
    None, "", "x", -1, 0, 2**53, 2**64, -(2**64) - 1, 1.5, float("inf"), True, [], {},
    b"\x00", "\ud7ff" * 3, "a" * 1025, [[[[[]]]]], {"a": None},
)
KINDS = ("state/set", "note/unknown", "runtime/transition")
WIRE_ONLY_TAGS: tuple[Any, ...] = (
    cbor2.CBORTag(1, 0), cbor2.CBORTag(32, "http://x"), cbor2.CBORTag(24, b"\xa0"),
    cbor2.undefined, cbor2.CBORSimpleValue(99),
)
RAW_BODIES = (
    bytes.fromhex("a0") + b"\x00",           # a map, then a byte after it
    bytes.fromhex("bf626964 01 626f70 64 68656164 ff".replace(" ", "")),  # indefinite map
    bytes.fromhex("83010203"),                # an array, not a map
    bytes.fromhex("ff"),                      # a break with nothing open
    b"",                                      # no item at all
    bytes.fromhex("a1626f70 62 ff fe".replace(" ", "")),  # text that is not UTF-8
    bytes.fromhex("a2626964 1b0000000000000063 626f70 64 68656164".replace(" ", "")),
    bytes.fromhex("a1626964 f97e00".replace(" ", "")),   # id: NaN (half float)
)
HELLOS: tuple[Any, ...] = (
    {"op": "hello", "args": {}},
    {"op": "hello", "args": {"protocol": 1.0}},
    {"op": "hello", "args": {"protocol": 2}},
    {"op": "hello", "args": {"protocol": "1"}},
    {"op": "hello"},
    {"op": "hello", "args": {"protocol": None}},
    {"op": "head", "args": {"store": 1, "conversationId": "c"}},
    {"op": "hello", "args": {"protocol": 1}, "extra": True},
)
"""The first request of a session case, before the proper hello (WIR-006)."""

_OP_IDS: dict[str, tuple[str, ...]] = {
    "hello": ("WIR-006",), "newStore": ("WIR-020",), "append": ("WIR-013", "WIR-012"),
    "read": ("WIR-013", "WIR-026"), "head": ("WIR-013",),
    "exportConversation": ("WIR-013", "WIR-014"), "importConversation": ("WIR-013", "WIR-014"),
    "transition": ("WIR-015",), "loadRun": ("WIR-015",), "listActiveRuns": ("WIR-015",),
    "loadSnapshot": ("WIR-015",), "scanRecoverable": ("WIR-015",), "purge": ("WIR-015",),
    "putSpill": ("WIR-016",), "getSpill": ("WIR-016", "WIR-030", "WIR-031", "WIR-032"),
    "search": ("WIR-017", "WIR-030", "WIR-031", "WIR-032"), "catchUp": ("WIR-018",),
    "loadCheckpoint": ("WIR-018",), "projectionStatus": ("WIR-018",),
}
_FAMILY_IDS: dict[str, tuple[str, ...]] = {
    "raw": ("WIR-003", "WIR-004"), "tagged": ("WIR-003", "WIR-004"), "shape": ("WIR-004",),
    "extra-member": ("WIR-004",), "extra-arg": ("WIR-026",), "draft-member": ("WIR-012",),
    "float-integer": ("WIR-011", "CAN-017"), "hostile": ("LIM-001",),
    "archive": ("ARC-002", "ERR-011"), "hello": ("WIR-006",), "unknown-op": ("WIR-007",),
}


def ids_of(family: str, op: str) -> tuple[str, ...]:
    """The spec ids a step of ``family`` sending ``op`` exercises."""
    return tuple(dict.fromkeys(_FAMILY_IDS.get(family, ()) + _OP_IDS.get(op, ())))
