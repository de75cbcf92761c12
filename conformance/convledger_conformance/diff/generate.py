"""The operation sequences of a differential run, generated from a seed.

A case is a list of :class:`Step`: one frame each. Most are requests on the
case's store (``Handle(0)``): slices of the shipped trace vectors
(``spec/vectors/traces``, translated to wire requests), ledger calls drawn
from small pools (so ids collide and windows run past the head), and the
malformed and hostile variants of chapter WIR and LIM: request members beyond
``id``/``op``/``args`` (WIR-004), ``args`` members no row names (WIR-026),
draft members beyond the six (WIR-012), tags and simple values WIR-003
excludes, bodies that are not a CBOR map, requests of the wrong shape,
integer arguments sent as floats (WIR-011), hostile argument values (LIM),
archives with another ``format`` or ``formatVersion`` (ARC-002) and, where
both servers declare them, spills read with a callback (WIR-030 .. WIR-034)
and searches. A *session* case also starts its own server and opens with
``hello`` requests of another shape (WIR-006).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from convledger.memory import MemoryStore
from convledger_conformance.diff.pools import (
    HELLOS,
    HOSTILE,
    KINDS,
    RAW_BODIES,
    WIRE_ONLY_TAGS,
    ids_of,
    scripts,
)
from convledger_conformance.diff.values import Handle, RawBody

STORE = Handle(0)
CONVERSATIONS = ("c", "d", "c\u0000x")
STAMP = "2024-05-01T12:00:00Z"


@attrs.frozen(eq=False)
class Step:
    """One frame of a case: what it sends, how callbacks are answered, what it touches."""

    family: str
    op: str
    send: Any
    callbacks: str = "deny"
    conversation: str | None = None
    ids: tuple[str, ...] = ()


class Generator:
    """Cases for two servers whose common capabilities are ``capabilities``."""

    def __init__(self, seed: int, capabilities: frozenset[str]) -> None:
        self.seed = seed
        self.capabilities = capabilities
        self.scripts = [item for item in scripts() if item.capabilities <= capabilities]
        self._archive = _sample_archive()
        self._ids = iter(range(1, 2**32))

    def case(self, number: int, length: int) -> list[Step]:
        """Case ``number``: newStore, then ``length`` chunks of one family each, in turn.

        The families take turns from an offset that moves with ``number``, so a
        case of at least as many chunks as there are families holds every family.
        """
        rng = random.Random(f"{self.seed}:{number}")
        self._ids = iter(range(1, 2**32))
        steps = [self._request("plain", "newStore", {}, None, store=False)]
        families = self._families()
        for chunk in range(length):
            steps.extend(self._make(families[(number + chunk) % len(families)], rng))
        return steps

    def session_case(self, number: int, length: int) -> list[Step]:
        """A case for its own session: two odd first requests (:data:`HELLOS`, in turn), then
        hello, newStore and ``length`` chunks."""
        self._ids = iter(range(1, 2**32))
        odd = [HELLOS[(2 * number + offset) % len(HELLOS)] for offset in (0, 1)]
        first = [Step("hello", str(item.get("op")), {"id": next(self._ids), **item},
                      ids=ids_of("hello", "hello")) for item in odd]
        return [*first, self.hello(), *self.case(number, length)]

    def hello(self) -> Step:
        """The proper first request (WIR-006)."""
        return Step("plain", "hello", {"id": 0, "op": "hello", "args": {"protocol": 1}},
                    ids=ids_of("hello", "hello"))

    def _families(self) -> list[str]:
        families = ["ledger", "script", "raw", "ledger", "tagged", "extra-member", "extra-arg",
                    "draft-member", "shape", "float-integer", "hostile", "archive", "script",
                    "unknown-op"]
        if "spills" in self.capabilities:
            families.append("spills")
        if "search" in self.capabilities:
            families.append("search")
        return families

    def _request(self, family: str, op: str, args: dict[str, Any], conversation: str | None,
                 *, store: bool = True, callbacks: str = "deny") -> Step:
        body = {"id": next(self._ids), "op": op,
                "args": {**({"store": STORE} if store else {}), **args}}
        return Step(family, op, body, callbacks, conversation, ids_of(family, op))

    def _make(self, family: str, rng: random.Random) -> list[Step]:
        return _FAMILIES[family](self, rng)

    # -- families --------------------------------------------------------------------------

    def ledger(self, rng: random.Random) -> list[Step]:
        cid = rng.choice(CONVERSATIONS)
        choice = rng.randrange(5)
        if choice <= 1:
            drafts = [_draft(rng) for _ in range(rng.randint(1, 3))]
            args: dict[str, Any] = {"conversationId": cid, "drafts": drafts}
            if rng.random() < 0.3:
                args["expectedHead"] = rng.choice([0, 1, 2, 3, None])
            return [self._request("ledger", "append", args, cid)]
        if choice == 2:
            args = {"conversationId": cid, "fromSeq": rng.choice([1, 2, 3, 7, 2**60]),
                    "limit": rng.choice([1, 2, 1000])}
            if rng.random() < 0.5:
                args["toSeq"] = rng.choice([1, 2, 5, None])
            return [self._request("ledger", "read", args, cid)]
        if choice == 3:
            return [self._request("ledger", "head", {"conversationId": cid}, cid)]
        return [self._request("ledger", "exportConversation", {"conversationId": cid}, cid)]

    def script(self, rng: random.Random) -> list[Step]:
        if not self.scripts:
            return self.ledger(rng)
        chosen = rng.choice(self.scripts)
        count = rng.randint(1, min(4, len(chosen.requests)))
        return [self._request("script", op, args, cid) for op, args, cid in
                chosen.requests[:count]]

    def _any_request(self, rng: random.Random) -> Step:
        return (self.script(rng) if rng.random() < 0.4 else self.ledger(rng))[0]

    def raw(self, rng: random.Random) -> list[Step]:
        return [Step("raw", "raw", RawBody(rng.choice(RAW_BODIES)),
                     ids=ids_of("raw", "raw"))]

    def tagged(self, rng: random.Random) -> list[Step]:
        base = self._any_request(rng)
        body = dict(base.send)
        odd = rng.choice(WIRE_ONLY_TAGS)
        where = rng.randrange(3)
        if where == 0:
            args = dict(body["args"])
            name = rng.choice(sorted(args))
            args[name] = odd
            body["args"] = args
        elif where == 1:
            body["args"] = {**body["args"], "zzTagged": odd}
        else:
            body["op"] = odd if rng.random() < 0.3 else body["op"]
            body["zzTagged"] = odd
        return [attrs.evolve(base, family="tagged", send=body, ids=ids_of("tagged", base.op))]

    def extra_member(self, rng: random.Random) -> list[Step]:
        base = self._any_request(rng)
        extra = rng.choice([("meta", 1), ("traceId", "t"), ("args2", {}), ("callback", 1)])
        body = {**base.send, extra[0]: extra[1]}
        return [attrs.evolve(base, family="extra-member", send=body,
                             ids=ids_of("extra-member", base.op))]

    def extra_arg(self, rng: random.Random) -> list[Step]:
        base = self._any_request(rng)
        body = {**base.send, "args": {**base.send["args"], "zzUnknown": rng.choice(HOSTILE)}}
        return [attrs.evolve(base, family="extra-arg", send=body,
                             ids=ids_of("extra-arg", base.op))]

    def draft_member(self, rng: random.Random) -> list[Step]:
        cid = rng.choice(CONVERSATIONS)
        drafts: list[Any] = [  # valid but for the change below, so nothing else refuses them
            {**_draft(rng), "kind": "state/set", "eventId": f"m-{rng.randrange(10**6)}"}
            for _ in range(rng.randint(1, 2))]
        victim = dict(drafts[-1])
        change = rng.random()
        if change < 0.7:  # a member outside the six (WIR-012)
            victim[rng.choice(["extra", "seq", "conversationId", "Kind"])] = rng.choice(
                [1, "x", None])
        elif change < 0.85:
            del victim[rng.choice(sorted(victim))]
        else:
            victim["ignorable"] = rng.choice([None, 0, "true"])
        drafts[-1] = victim
        return [self._request("draft-member", "append",
                              {"conversationId": cid, "drafts": drafts}, cid)]

    def shape(self, rng: random.Random) -> list[Step]:
        base = self._any_request(rng)
        body = dict(base.send)
        change = rng.randrange(6)
        if change == 0:
            del body["id"]
        elif change == 1:
            body["id"] = rng.choice([-1, "7", True, 2**64, 1.0, None])
        elif change == 2:
            body["op"] = rng.choice([1, None, b"head"])
        elif change == 3:
            body["args"] = rng.choice([[], "x", None, 0])
        elif change == 4:
            del body["op"]
        else:
            body = {"id": body["id"], "op": body["op"], "args": {**body["args"], "store": None}}
        return [attrs.evolve(base, family="shape", send=body, ids=ids_of("shape", base.op))]

    def unknown_op(self, rng: random.Random) -> list[Step]:
        # not ``capabilities``, ``openStore`` nor a capability's request: conforming servers
        # that declare different capabilities answer those differently
        op = rng.choice(["frobnicate", "Append", "", "headS"])
        return [self._request("unknown-op", op, {"conversationId": "c"}, "c")]

    def float_integer(self, rng: random.Random) -> list[Step]:
        cid = rng.choice(CONVERSATIONS)
        choice = rng.randrange(3)
        if choice == 0:
            args = {"conversationId": cid, "fromSeq": 1.0, "limit": rng.choice([10.0, 10])}
            return [self._request("float-integer", "read", args, cid)]
        if choice == 1:
            args = {"conversationId": cid, "drafts": [_draft(rng)], "expectedHead": 0.0}
            return [self._request("float-integer", "append", args, cid)]
        draft = {**_draft(rng), "schemaVersion": 1.0}
        return [self._request("float-integer", "append",
                              {"conversationId": cid, "drafts": [draft]}, cid)]

    def hostile(self, rng: random.Random) -> list[Step]:
        base = self._any_request(rng)
        args = dict(base.send["args"])
        names = sorted(name for name in args if name != "store")
        if names:
            args[rng.choice(names)] = rng.choice(HOSTILE)
        body = {**base.send, "args": args}
        return [attrs.evolve(base, family="hostile", send=body, ids=ids_of("hostile", base.op))]

    def archive(self, rng: random.Random) -> list[Step]:
        text = self._archive
        cid = rng.choice(CONVERSATIONS[:2])
        text = text.replace('"conversationId":"c"', json.dumps({"conversationId": cid})[1:-1]
                            .replace(": ", ":"))
        change = rng.randrange(3)
        if change == 0:
            value = rng.choice(["null", '"1"', "1.0", "1.5", "2", "true", "-1", "1e0", "[1]"])
            text = text.replace('"formatVersion":1', f'"formatVersion":{value}')
        elif change == 1:
            text = text.replace('"format":"convledger.archive"',
                                rng.choice(['"format":"other"', '"format":null']))
            if rng.random() < 0.5:
                text = text.replace('"formatVersion":1', '"formatVersion":null')
        else:
            text = text.replace('"formatVersion":1,', "")
        return [self._request("archive", "importConversation",
                              {"archive": text.encode("utf-8")}, cid)]

    def spills(self, rng: random.Random) -> list[Step]:
        cid = rng.choice(CONVERSATIONS[:2])
        reference = rng.choice(["r1", "r2"])
        put = self._request("spills", "putSpill", {
            "conversationId": cid, "data": rng.choice([b"\x00bytes\xff", b""]),
            "mediaType": "application/octet-stream",
            "operation": {"operationId": "op-1", "authorization": {"user": "u-1"}},
            "reference": reference, "eventId": f"s-{rng.randrange(40)}", "occurredAt": STAMP,
        }, cid)
        get = self._request("spills", "getSpill", {
            "conversationId": cid, "reference": reference, "authorize": True,
        }, cid, callbacks=rng.choice(["grant", "deny", "raise"]))
        steps = [put, get] if rng.random() < 0.8 else [get]
        if rng.random() < 0.3:  # a value that is not callable reaches the store (WIR-030)
            steps.append(self._request("spills", "getSpill", {
                "conversationId": cid, "reference": reference, "authorize": False}, cid))
        return steps

    def search(self, rng: random.Random) -> list[Step]:
        args = {"requester": rng.choice(["c", "d"]), "query": rng.choice(["slot", "x", ""]),
                "authorize": True}
        if rng.random() < 0.5:
            args["scope"] = list(CONVERSATIONS[:2])
        return [self._request("search", "search", args, None,
                              callbacks=rng.choice(["grant", "deny", "raise"]))]


_FAMILIES: dict[str, Callable[[Generator, random.Random], list[Step]]] = {
    "ledger": Generator.ledger, "script": Generator.script, "raw": Generator.raw,
    "tagged": Generator.tagged, "extra-member": Generator.extra_member,
    "extra-arg": Generator.extra_arg, "draft-member": Generator.draft_member,
    "shape": Generator.shape, "unknown-op": Generator.unknown_op,
    "float-integer": Generator.float_integer, "hostile": Generator.hostile,
    "archive": Generator.archive, "spills": Generator.spills, "search": Generator.search,
}


def _draft(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(KINDS)
    payload: Any = {"name": "slot", "version": 1, "value": rng.randrange(3), "actor": "diff"}
    return {"eventId": f"e-{rng.randrange(6)}", "kind": kind, "occurredAt": STAMP,
            "payload": payload, "schemaVersion": 1, "ignorable": rng.random() < 0.3}


def _sample_archive() -> str:
    """The canonical archive of a two-event conversation ``c``, from the reference."""
    store = MemoryStore()
    from convledger.envelope import EventDraft

    store.append("c", [EventDraft(event_id=f"a-{n}", kind="state/set", occurred_at=STAMP,
                                  payload={"name": "slot", "version": 1, "value": n,
                                           "actor": "diff"}) for n in (1, 2)])
    text = store.export_conversation("c").decode("utf-8")
    store.close()
    return text


def step_names(steps: Sequence[Step]) -> list[str]:
    """A short label per step (for messages)."""
    return [f"{step.family}:{step.op}" for step in steps]
