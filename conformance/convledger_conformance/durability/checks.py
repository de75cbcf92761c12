"""The in-process checks of chapter DUR: a multi_process store's locator, killed and raced.

A store that declares ``multi_process`` tells another process how to open it
(its locator, LED-016). These checks start ``convledger serve-wire --opener``
on that locator as the store's process, kill it with SIGKILL at random
moments and check what the store answers after (DUR-001 .. DUR-008), and run
concurrent clients on it, in threads on handles of this process
(``open_handle``) and in server processes, checking their histories
(DUR-010 .. DUR-013). Wire servers are judged by ``convledger-conformance
crash --command`` (:mod:`.cli`); over the wire no store declares
``multi_process`` (WIR-021), so these checks are ``not_applicable`` there.
"""

from __future__ import annotations

from typing import Any

from convledger.capabilities import Capability
from convledger_conformance.durability.concurrency import concurrent_run as concurrent_processes
from convledger_conformance.durability.concurrency import run_clients
from convledger_conformance.durability.crash import crash_run
from convledger_conformance.durability.handoff import hand_off_calls
from convledger_conformance.durability.target import Target
from convledger_conformance.registry import CheckContext, CheckFailure, check, expect

ROUNDS = {"smoke": 2, "ci": 3, "thorough": 12}
"""Kills per profile."""
STEPS = {"smoke": 25, "ci": 60, "thorough": 200}
"""Calls per concurrent client per profile."""
CLIENTS = 3
SEED = 17
"""A fixed seed: the workload and the kill delays repeat from run to run."""


def _located(context: CheckContext) -> tuple[Any, Target]:
    store: Any = context.factory()
    locator = store.locator()
    return store, Target.opener(locator.opener, locator.argument)


@check("DUR-001", "DUR-002", "DUR-003", "DUR-004", "DUR-005", "DUR-006", "DUR-007", "DUR-008",
       "DUR-014", "DUR-015", "DUR-016", "WIR-040", "WIR-042",
       capability=Capability.MULTI_PROCESS, also=(Capability.PERSISTENCE,))
def killed_store_keeps_what_it_acknowledged(context: CheckContext) -> None:
    """SIGKILL the store's server process at random moments; every acknowledgement survives."""
    store, target = _located(context)
    rounds = ROUNDS.get(context.profile, 3)
    try:
        result = crash_run(target, rounds, SEED, import_events=1000, max_delay=0.6)
    finally:
        store.close()
    if result.failures:
        failure = result.failures[0]
        raise CheckFailure((failure.rule,), failure.render() + f" ({len(result.failures)} in all)")
    expect(result.kills == rounds and result.rounds == rounds, "DUR-008",
           f"only {result.kills} of {rounds} kills landed and were verified")
    expect(result.acknowledged > 0, "DUR-001", "no write was acknowledged: nothing was checked")


@check("DUR-010", "DUR-011", "DUR-012", "DUR-013", "WIR-041",
       capability=Capability.MULTI_PROCESS)
def concurrent_histories_are_linearizable(context: CheckContext) -> None:
    """K writers in threads (open_handle) and in processes: linearizable per conversation."""
    steps = STEPS.get(context.profile, 60)
    store, target = _located(context)
    try:
        handles = [store.open_handle() for _ in range(CLIENTS)]
        try:
            threads = run_clients(handles, steps, SEED)
        finally:
            for handle in handles:
                handle.close()
        processes = concurrent_processes(target, CLIENTS, steps, SEED + 1, prefix="processes-")
    finally:
        store.close()
    expect(not processes.not_applicable, "WIR-041", processes.not_applicable)
    for name, result in (("threads", threads), ("processes", processes)):
        if result.failures:
            first = result.failures[0]
            raise CheckFailure((first.rule,), f"{name}: {first.message}")
        wanted = CLIENTS * steps + hand_off_calls(CLIENTS)
        expect(len(result.calls) == wanted, "DUR-012",
               f"{name}: {len(result.calls)} of {wanted} calls completed")
        too_long = [v.conversation for v in result.verdicts if v.status == "too_long"]
        expect(not too_long, ("DUR-010", "DUR-013"),
               f"{name}: not checked: too long ({too_long}); a smaller --steps checks them")
        expect(any(v.status == "linearizable" for v in result.verdicts), "DUR-010",
               f"{name}: no history was checked")
