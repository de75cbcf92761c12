"""Checks of chapter PRV: provider requests, messages, responses, retries and prompt isolation.

The checks drive the reference step loop (:class:`convledger.host.Host`) on the
store under test; the store's part is to keep what the loop appends in order
and to place runs as chapter TRN says, which is what makes the prompt
isolation of PRV-020 hold. Each body is a function of the store and the host
class, so ``tests/test_gallery_facts.py`` runs the same bodies against broken
hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Final

from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from convledger.host import FakeProvider, Host, events_of
from convledger.host.messages import message_sha
from convledger.interface import require
from convledger.store import Capability, LedgerStore
from convledger_conformance.facts.invariants import (
    CONVERSATION,
    drive,
    make_host,
    provider_problems,
)
from convledger_conformance.facts.machine import HOST_MACHINE_IDS, build_host_machine
from convledger_conformance.profiles import scaled
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import fail, run_once, run_property

TRANSITIONS: Final = Capability.TRANSITIONS
RANDOM_IDS = (
    "PRV-001", "PRV-002", "PRV-003", "PRV-004", "PRV-005", "PRV-010", "PRV-011", "PRV-012",
    "PRV-013", "PRV-020",
)


def _report(problems: Sequence[tuple[tuple[str, ...], str]]) -> None:
    if problems:
        ids, message = problems[0]
        fail(ids, f"{message} ({len(problems)} problem(s))")


def random_program(
    store: LedgerStore, seed: int, turns: int, *, host_class: type[Host] = Host
) -> None:
    """A seeded provider fails, times out, calls tools and succeeds; every invariant holds."""
    _report(provider_problems(drive(host_class, require(store, TRANSITIONS), seed=seed,
                                    turns=turns)))


def scripted_program(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """A tool step, a retry, a tool failure and early successor inputs, all in order."""
    script = ["tool", "ok", "timeout", "ok", "tool", "fail_after_tool", "ok"]
    driven = drive(host_class, require(store, TRANSITIONS), seed=None, turns=4, script=script)
    _report(provider_problems(driven))
    kinds = [event.kind for event in driven.events]
    for kind in ("retry/scheduled", "retry/started", "provider/response", "provider/message"):
        if kind not in kinds:
            fail(("PRV-012", "PRV-010", "PRV-004"), f"the scripted program wrote no {kind}")
    if len(driven.ordinals) < 2:
        fail("PRV-020", "no successor run was admitted during a predecessor's call")


@check(*RANDOM_IDS, capability=TRANSITIONS)
def check_provider_facts_over_random_programs(ctx: CheckContext) -> None:
    """Random provider outcomes keep every request, response, retry and isolation invariant."""
    def body(store: LedgerStore, seed: int, turns: int) -> None:
        random_program(store, seed, turns)

    run_property(ctx, body, st.integers(0, 2**32 - 1), st.integers(1, 4), share=0.3)


@check(*RANDOM_IDS, capability=TRANSITIONS)
def check_provider_facts_of_a_scripted_program(ctx: CheckContext) -> None:
    """A scripted retry, tool step, failure after a tool and early successor input hold."""
    run_once(ctx, scripted_program)


def response_provider(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """``response.provider`` is present exactly when the adapter resolved one (PRV-010)."""
    for conversation, name in (("conv-a", "acme"), ("conv-b", None)):
        host = make_host(
            host_class, store, FakeProvider(["ok"], provider=name), namespace=conversation
        )
        host.run(conversation, host.accept(conversation, "hi"))
        responses = [
            event.payload for event in events_of(store, conversation)
            if event.kind == "provider/response" and isinstance(event.payload, dict)
        ]
        resolved = [item["response"] for item in responses]
        expected: list[dict[str, Any]] = [
            {"id": "resp-1", "provider": name} if name else {"id": "resp-1"}
        ]
        if resolved != expected:
            fail("PRV-010", f"responses {resolved!r}, expected {expected!r}")


@check("PRV-010", capability=TRANSITIONS)
def check_response_provider_only_when_resolved(ctx: CheckContext) -> None:
    """``response.provider`` is present exactly when the adapter resolved one."""
    run_once(ctx, response_provider)


def binary_parts(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """A tool's binary output is recorded as ``{binary, sha256, bytes}`` (PRV-005)."""
    host = make_host(host_class, store, FakeProvider(["tool", "ok"]))
    host.run(CONVERSATION, host.accept(CONVERSATION, "pic"),
             tools={"lookup": lambda args: {"image": b"\x00\x01\x02"}})
    stubs = [
        event.payload for event in events_of(store, CONVERSATION)
        if event.kind == "provider/message" and "binary" in str(event.payload)
    ]
    stub = {"binary": True, "bytes": 3,
            "sha256": "ae4b3280e56e2faf83f414a6e3dabe9d5fbe18976544c05fed121accb85b53fc"}
    if not any(
        isinstance(item, dict) and isinstance(item["message"], dict)
        and item["message"].get("content") == {"image": stub}
        and item["sha256"] == message_sha(item["message"])
        for item in stubs
    ):
        fail("PRV-005", f"binary output recorded as {stubs!r}")


@check("PRV-005", capability=TRANSITIONS)
def check_binary_parts_are_replaced(ctx: CheckContext) -> None:
    """Binary parts of a body are recorded as their hash and size, never as data."""
    run_once(ctx, binary_parts)


class _CountingStore:
    """A proxy of a store that counts ``read`` calls."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store
        self.reads = 0

    def read(self, *args: Any, **kwargs: Any) -> Any:
        """Count, then read."""
        self.reads += 1
        return self._store.read(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def one_paged_read(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """A run reads the ledger once, page by page, for the bodies it holds (PRV-006)."""
    counting = _CountingStore(store)
    host = make_host(host_class, counting, FakeProvider(["ok", "ok", "fail", "ok"]))
    for text in ("one", "two"):
        run_id = host.accept(CONVERSATION, text)
        before = counting.reads
        host.run(CONVERSATION, run_id)
        if counting.reads - before != 1:
            fail("PRV-006", f"a run read the ledger {counting.reads - before} times")


@check("PRV-006", capability=TRANSITIONS)
def check_bodies_are_learned_from_one_read(ctx: CheckContext) -> None:
    """Which bodies exist is learned from one paged read at run start, not per call."""
    run_once(ctx, one_paged_read)


BODIES = {
    "random": partial(random_program, seed=7, turns=4),
    "scripted": scripted_program,
    "response_provider": response_provider,
    "binary_parts": binary_parts,
    "one_paged_read": one_paged_read,
}
"""The check bodies by name, for running them against broken hosts."""


@check(*HOST_MACHINE_IDS, capability=TRANSITIONS)
def check_host_state_machine(ctx: CheckContext) -> None:
    """A provider failing, timing out and succeeding at random keeps every invariant."""
    machine = build_host_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=scaled(ctx.profile, share=0.3))
