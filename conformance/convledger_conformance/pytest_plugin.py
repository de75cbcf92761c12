"""Opt-in pytest plugin: every conformance check as one pytest test.

Opt in from your ``conftest.py`` (there is no auto-registration)::

    pytest_plugins = ["convledger_conformance.pytest_plugin"]

    @pytest.fixture
    def store_factory():
        return MyStore          # a zero-argument callable returning a fresh store

and write one test that asks for ``conformance_check``::

    def test_conformance(conformance_check):
        conformance_check()

The plugin parametrizes ``conformance_check`` with every registered check, so
each check is one test named after it (``test_conformance[<check name>]``;
``-k`` selects checks) and the requirement ids it covers are recorded as
``requirement`` properties (they show in ``--junitxml``). Instead of a
``store_factory`` fixture, ``--convledger-store MODULE:FACTORY`` names the
factory on the command line; a fixture in the user's conftest wins over the
option. ``--convledger-profile`` picks the Hypothesis profile (default ``ci``).

A check of a capability the store does not declare is skipped (CAP-001).

Fix and rerun (issue 35): each check runs with its own seed. ``--convledger-seed
N`` derives every check's seed from ``N`` (as the command line's ``--seed``
does); without it a seed is drawn per test. The seed of a failed test is kept
in pytest's cache (``convledger/seeds``, by test id) and reused by the next
run of that test, so ``pytest --lf`` or ``--ff`` replays the failing examples
first and keeps failing until the store is fixed; a pass forgets the seed. The
failure ends in the seed and how to repeat it. (Without pytest's cache,
``-p no:cacheprovider``, only ``--convledger-seed`` repeats a run.)
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import attrs
import hypothesis.core
import pytest

from convledger_conformance.factories import FactoryLoadError, load_factory
from convledger_conformance.profiles import PROFILES
from convledger_conformance.registry import Check, StoreFactory, all_checks
from convledger_conformance.runner import context_for
from convledger_conformance.runsettings import SEED_BITS, check_seed

SEEDS_KEY = "convledger/seeds"
"""The pytest cache entry holding the seed of each failed conformance test, by test id."""


@attrs.frozen
class BoundCheck:
    """One check bound to a store factory and a profile; call it to run the check."""

    check: Check
    factory: StoreFactory
    profile: str
    seed: int | None = None
    """The check's own Hypothesis seed (None: Hypothesis chooses)."""
    remember: Callable[[int | None], None] = lambda seed: None
    """Called with the seed after a failure, with None after a pass."""
    repeat: str = ""
    """How to repeat a failure, added to it as a note."""

    def __call__(self) -> None:
        """Run the check, skipping it when the store does not declare its capability."""
        context = context_for(self.check, self.factory, profile=self.profile)
        if context is None:
            needed = ", ".join(c.value for c in (self.check.capability, *self.check.also))
            pytest.skip(f"needs capabilities {needed}, which the store does not all declare")
        previous = hypothesis.core.global_force_seed
        if self.seed is not None:  # Hypothesis' own override (its --hypothesis-seed sets it)
            hypothesis.core.global_force_seed = self.seed  # type: ignore[assignment]
        try:
            self.check.run(context)
        except Exception as error:
            self.remember(self.seed)
            if self.repeat:
                error.add_note(self.repeat)
            raise
        finally:
            hypothesis.core.global_force_seed = previous
        self.remember(None)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--convledger-store`` and ``--convledger-profile``."""
    group = parser.getgroup("convledger", "convledger conformance")
    group.addoption(
        "--convledger-store",
        metavar="MODULE:FACTORY",
        default=None,
        help="zero-argument callable returning a fresh store (unless a store_factory "
        "fixture is defined)",
    )
    group.addoption(
        "--convledger-profile",
        choices=PROFILES,
        default="ci",
        help="Hypothesis profile of the conformance checks (default: ci)",
    )
    group.addoption(
        "--convledger-seed",
        metavar="N",
        type=int,
        default=None,
        help="derive every check's seed from N (without it each test draws one; a failed "
        "test's seed is kept for --lf/--ff)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Refuse a ``--convledger-store`` that cannot be loaded before anything runs."""
    spec = config.getoption("convledger_store")
    if spec is not None:
        try:
            load_factory(spec)
        except FactoryLoadError as error:
            raise pytest.UsageError(f"--convledger-store: {error}") from error


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``conformance_check`` with every registered check, named after it."""
    if "conformance_check" in metafunc.fixturenames:
        checks = list(all_checks())
        metafunc.parametrize(
            "conformance_check", checks, ids=[item.name for item in checks], indirect=True
        )


@pytest.fixture
def store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    """The factory named by ``--convledger-store``; override this fixture in your conftest."""
    spec = request.config.getoption("convledger_store")
    if spec is None:
        pytest.fail(
            "convledger conformance needs a store: define a store_factory fixture "
            "or pass --convledger-store MODULE:FACTORY",
            pytrace=False,
        )
    return load_factory(spec)


@pytest.fixture
def convledger_profile(request: pytest.FixtureRequest) -> str:
    """The Hypothesis profile named by ``--convledger-profile``."""
    profile: str = request.config.getoption("convledger_profile")
    return profile


@pytest.fixture
def conformance_check(
    request: pytest.FixtureRequest, store_factory: StoreFactory, convledger_profile: str
) -> BoundCheck:
    """The check this test runs, bound to ``store_factory``; records its requirement ids."""
    item: Check = request.param
    for requirement in item.ids:
        request.node.user_properties.append(("requirement", requirement))
    seed, repeat = _seed_of(request, item)
    return BoundCheck(check=item, factory=store_factory, profile=convledger_profile,
                      seed=seed, remember=_remembering(request), repeat=repeat)


def _seed_of(request: pytest.FixtureRequest, item: Check) -> tuple[int, str]:
    """The check's seed (from --convledger-seed, a kept failure, or drawn) and a repeat note."""
    run_seed: int | None = request.config.getoption("convledger_seed")
    if run_seed is not None:
        return check_seed(run_seed, item.name), (
            f"convledger seed: repeat with --convledger-seed {run_seed} -k {item.name!r}")
    cache = getattr(request.config, "cache", None)
    kept = cache.get(SEEDS_KEY, {}) if cache is not None else {}
    seed = kept.get(request.node.nodeid) if isinstance(kept, dict) else None
    if not isinstance(seed, int):
        seed = check_seed(secrets.randbelow(2**SEED_BITS), item.name)
    return seed, (f"convledger seed of this check: {seed}, kept for `pytest --lf` "
                  "(it replays these examples until the store is fixed)"
                  if cache is not None else "")


def _remembering(request: pytest.FixtureRequest) -> Callable[[int | None], None]:
    """Keeps (a seed) or forgets (None) the seed of this test in pytest's cache."""
    cache = getattr(request.config, "cache", None)
    nodeid = request.node.nodeid

    def remember(seed: int | None) -> None:
        if cache is None:
            return
        kept = cache.get(SEEDS_KEY, {})
        kept = dict(kept) if isinstance(kept, dict) else {}
        if seed is None:
            if kept.pop(nodeid, None) is None:
                return
        else:
            kept[nodeid] = seed
        cache.set(SEEDS_KEY, kept)

    return remember
