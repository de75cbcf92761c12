"""How checks declare the requirements they cover.

A *check* is one named function of a :class:`CheckContext`. It covers the
requirement ids given to :func:`check`; the runner gives each id the status of
the checks that cover it (CAP-004). A check fails by raising
:class:`CheckFailure` (an ``AssertionError``) naming the ids it proves broken;
any other exception fails every id the check covers.

Checks never detect capabilities (CAP-001): ``capability`` says which declared
capability the check exercises. When the store does not declare it, the
runner does not run the check; a separate CAP-002 check proves the store
refuses those operations with ``not_supported``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import attrs

from convledger.store import Capability, LedgerStore


class StoreFactory(Protocol):
    """Makes a fresh, empty store each time it is called (one per Hypothesis example)."""

    def __call__(self) -> LedgerStore: ...


@attrs.frozen
class CheckContext:
    """What a check receives: the factory and the Hypothesis settings of the profile."""

    factory: StoreFactory
    profile: str
    capabilities: frozenset[Capability]


class CheckFailure(AssertionError):
    """A check found a store breaking the requirements ``ids``."""

    def __init__(self, ids: Sequence[str], message: str) -> None:
        super().__init__(f"[{', '.join(ids)}] {message}")
        self.ids = tuple(ids)
        self.message = message


class HelperBroken(Exception):
    """A store call the suite made for its own bookkeeping failed (CAP-006).

    The suite's helpers (:func:`convledger_conformance.ledger.model.read_whole`,
    ``state_digest``) read a whole ledger and its head to compare states; when the
    store refuses or breaks such a call, the check that called it cannot judge what it
    tests. The runner reports that check ``not_run`` and gives the broken call ONE
    finding of its own, failing ``ids`` (the requirements the call relies on), however
    many checks it stopped.
    """

    def __init__(self, call: str, ids: Sequence[str], error: BaseException) -> None:
        super().__init__(f"the suite's helper call {call} failed: {error!r}")
        self.call = call
        """What was called, with its arguments (``read with limit 1000``)."""
        self.ids = tuple(ids)
        self.error = error

    @property
    def outcome(self) -> str:
        """The call and what it came to: ``read with limit 1000 is refused (invalid_input)``."""
        kind = getattr(self.error, "kind", None)
        if isinstance(kind, str):
            return f"{self.call} is refused ({kind})"
        return f"{self.call} raises {type(self.error).__name__}"


def expect(condition: bool, ids: str | Sequence[str], message: str) -> None:
    """Raise :class:`CheckFailure` for ``ids`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailure((ids,) if isinstance(ids, str) else ids, message)


CheckFunction = Callable[[CheckContext], None]


@attrs.frozen
class Check:
    """One registered check."""

    name: str
    ids: tuple[str, ...]
    capability: Capability
    run: CheckFunction = attrs.field(eq=False, repr=False)
    doc: str = ""
    also: tuple[Capability, ...] = ()
    """Further capabilities the check needs besides ``capability`` (all must be declared)."""
    optional: tuple[Capability, ...] = ()
    """Capabilities the check uses when they are declared, and whose absence still lets it
    establish every id it covers (a purge check reads runs back only when there are runs).

    A capability whose absence leaves a precondition of one of its ids unestablished
    belongs in ``also`` instead, so the check is not run and its ids are
    ``not_applicable`` (with the reason) rather than passed vacuously:
    ``tests/test_vacuous_passes.py`` runs every check on stores lacking each
    capability it uses and fails for one that passes without a capability it
    neither needs (``also``) nor names here.
    """

    def missing(self, declared: frozenset[Capability]) -> tuple[Capability, ...]:
        """The capabilities this check needs that ``declared`` lacks (empty: it may run)."""
        return tuple(item for item in (self.capability, *self.also) if item not in declared)


_CHECKS: dict[str, Check] = {}


def check(
    *ids: str,
    capability: Capability = Capability.LEDGER,
    also: tuple[Capability, ...] = (),
    optional: tuple[Capability, ...] = (),
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as a check covering ``ids``.

    ``capability`` is the capability the check exercises; ``also`` names
    capabilities it merely needs to set its scene (purge traces need
    transitions to create runs). The check runs only when all are declared.
    ``optional`` names capabilities it uses only when declared, whose absence
    still establishes its ids (see :attr:`Check.optional`).
    """
    if not ids:
        raise ValueError("a check must cover at least one requirement id")

    def register(function: CheckFunction) -> CheckFunction:
        name = function.__name__.removeprefix("check_")
        if name in _CHECKS:
            raise ValueError(f"check {name!r} registered twice")
        _CHECKS[name] = Check(
            name=name,
            ids=tuple(ids),
            capability=capability,
            run=function,
            doc=(function.__doc__ or "").strip().splitlines()[0] if function.__doc__ else "",
            also=tuple(also),
            optional=tuple(optional),
        )
        return function

    return register


CHECK_MODULES: tuple[str, ...] = (
    "convledger_conformance.ledger.checks_archive",
    "convledger_conformance.ledger.checks_archive_vectors",
    "convledger_conformance.ledger.checks_canonical",
    "convledger_conformance.ledger.checks_capabilities",
    "convledger_conformance.ledger.checks_envelope",
    "convledger_conformance.ledger.checks_errors",
    "convledger_conformance.ledger.checks_precedence",
    "convledger_conformance.ledger.checks_gaps",
    "convledger_conformance.sqlite.machine",
    "convledger_conformance.sqlite.checks",
    "convledger_conformance.sqlite.checks_opening",
    "convledger_conformance.sqlite.checks_migration",
    "convledger_conformance.sqlite.checks_transactions",
    "convledger_conformance.facts.checks_facts",
    "convledger_conformance.ledger.checks_handles",
    "convledger_conformance.ledger.checks_freshness",
    "convledger_conformance.ledger.checks_kinds",
    "convledger_conformance.ledger.checks_ledger",
    "convledger_conformance.ledger.checks_positions",
    "convledger_conformance.projections.checks",
    "convledger_conformance.projections.checks_folds",
    "convledger_conformance.projections.checks_positions",
    "convledger_conformance.projections.checks_archives",
    "convledger_conformance.facts.checks_provider",
    "convledger_conformance.ledger.checks_claims",
    "convledger_conformance.runtime.checks_transitions",
    "convledger_conformance.runtime.checks_reads",
    "convledger_conformance.runtime.checks_rare_transitions",
    "convledger_conformance.runtime.checks_pairs",
    "convledger_conformance.runtime.checks_replay",
    "convledger_conformance.runtime.checks_purge",
    "convledger_conformance.runtime.checks_positions",
    "convledger_conformance.ledger.checks_replay",
    "convledger_conformance.ledger.checks_report",
    "convledger_conformance.search.checks",
    "convledger_conformance.spills.checks",
    "convledger_conformance.spills.checks_positions",
    "convledger_conformance.spills.checks_claims",
    "convledger_conformance.sqlite.checks_companions",
    "convledger_conformance.sqlite.checks_runtime",
    "convledger_conformance.sqlite.checks_runtime_transactions",
    "convledger_conformance.sqlite.checks_runtime_records",
    "convledger_conformance.durability.checks",
    "convledger_conformance.durability.checks_settle",
    "convledger_conformance.durability.checks_migration",
    "convledger_conformance.sqlite.checks_search",
    "convledger_conformance.sqlite.checks_index",
    "convledger_conformance.ledger.checks_tools",
    "convledger_conformance.vectors.checks",
    "convledger_conformance.wire.checks",
    "convledger_conformance.wire.checks_requests",
    "convledger_conformance.wire.checks_callbacks",
    "convledger_conformance.wire.checks_gaps",
    "convledger_conformance.hostile.checks",
    "convledger_conformance.hostile.boundaries",
    "convledger_conformance.hostile.checks_edges",
    "convledger_conformance.faults.checks",
)
"""Every module that registers checks, in the order :func:`load_checks` imports them.

The one place a check module is made known: a new module of checks is added
here (``tests/test_layers.py`` fails while a module using :func:`check` is
missing). The order is the registration order, hence the order of
``--list``, of reports and of a run; it is the order of the former flat
``checks/`` package (its module names sorted), kept when the suite moved to
one folder per chapter so that no report changed order. Two groups stand
where their checks first registered, imported by the module after them:
``sqlite.machine`` .. ``sqlite.checks_transactions`` before
``facts.checks_facts`` (which imports ``sqlite.checks``; that module imported
``sqlite.machine`` until it was split), and ``runtime.checks_transitions`` ..
``runtime.checks_replay`` before ``runtime.checks_purge`` (which imports
``runtime.checks_transitions``). A module split to stay small is followed by
its parts, in the order their checks had.
"""


_LOADED: list[bool] = []
"""Non-empty once :func:`load_checks` ran: the registry keeps what the modules registered."""


def load_checks() -> None:
    """Import every module of :data:`CHECK_MODULES` once (each registers its checks on import).

    Once only: a host that drops the check modules from ``sys.modules`` and
    keeps this one (pytest's in-process runs restore ``sys.modules``) would
    otherwise import them again and register every check twice.
    """
    if _LOADED:
        return
    for name in CHECK_MODULES:
        importlib.import_module(name)
    _LOADED.append(True)


def all_checks() -> Iterator[Check]:
    """Every registered check, in registration order (imports the check modules first)."""
    load_checks()
    place = {name: index for index, name in enumerate(CHECK_MODULES)}
    # The order of CHECK_MODULES, then of definition in each module: the same
    # whichever module a caller happened to import first.
    order = {name: index for index, name in enumerate(_CHECKS)}
    yield from sorted(
        _CHECKS.values(),
        key=lambda item: (place.get(item.run.__module__, len(place)), order[item.name]),
    )


def covered_ids() -> frozenset[str]:
    """Every requirement id some check covers."""
    return frozenset(requirement for item in all_checks() for requirement in item.ids)
