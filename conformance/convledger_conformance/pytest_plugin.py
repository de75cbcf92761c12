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
"""

from __future__ import annotations

import attrs
import pytest

from convledger_conformance.factories import FactoryLoadError, load_factory
from convledger_conformance.profiles import PROFILES
from convledger_conformance.registry import Check, StoreFactory, all_checks
from convledger_conformance.runner import context_for


@attrs.frozen
class BoundCheck:
    """One check bound to a store factory and a profile; call it to run the check."""

    check: Check
    factory: StoreFactory
    profile: str

    def __call__(self) -> None:
        """Run the check, skipping it when the store does not declare its capability."""
        context = context_for(self.check, self.factory, profile=self.profile)
        if context is None:
            needed = ", ".join(c.value for c in (self.check.capability, *self.check.also))
            pytest.skip(f"needs capabilities {needed}, which the store does not all declare")
        self.check.run(context)


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
    return BoundCheck(check=item, factory=store_factory, profile=convledger_profile)
