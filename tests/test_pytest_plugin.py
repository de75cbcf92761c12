"""The opt-in pytest plugin and the unittest base class, driven as a user would drive them.

Each test writes a user's ``conftest.py`` and test module into a fresh
directory and runs pytest (or ``python -m unittest``) on it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from convledger.store import Capability
from convledger_conformance.registry import Check, all_checks

pytest_plugins = ["pytester"]

OPT_IN = 'pytest_plugins = ["convledger_conformance.pytest_plugin"]\n'

USER_TEST = """
def test_conformance(conformance_check):
    conformance_check()
"""

FACTORY_FIXTURE = """
import pytest
from convledger import MemoryStore

@pytest.fixture
def store_factory():
    return MemoryStore
"""


def _ledger_check() -> Check:
    """The first registered check of capability ledger."""
    return next(item for item in all_checks() if item.capability is Capability.LEDGER)


def test_each_check_is_one_test(pytester: pytest.Pytester) -> None:
    """With the plugin opted in, conformance_check yields one test per registered check."""
    pytester.makeconftest(OPT_IN + FACTORY_FIXTURE)
    pytester.makepyfile(test_user_store=USER_TEST)
    result = pytester.runpytest("--collect-only", "-q")
    names = [item.name for item in all_checks()]
    result.stdout.fnmatch_lines(
        [f"test_user_store.py::test_conformance[[]{name}[]]" for name in names]
    )
    assert result.ret == pytest.ExitCode.OK


def test_keyword_selects_one_check_and_it_passes(pytester: pytest.Pytester) -> None:
    """-k <check name> runs that one check against the user's store_factory fixture."""
    pytester.makeconftest(OPT_IN + FACTORY_FIXTURE)
    pytester.makepyfile(test_user_store=USER_TEST)
    name = _ledger_check().name
    result = pytester.runpytest("--convledger-profile", "smoke", "-k", name)
    result.assert_outcomes(passed=1)


def test_store_option_names_the_factory(pytester: pytest.Pytester) -> None:
    """Without a fixture, --convledger-store MODULE:FACTORY names the store."""
    pytester.makeconftest(OPT_IN)
    pytester.makepyfile(test_user_store=USER_TEST)
    name = _ledger_check().name
    result = pytester.runpytest(
        "--convledger-store", "convledger.memory:MemoryStore", "--convledger-profile", "smoke",
        "-k", name,
    )
    result.assert_outcomes(passed=1)


def test_conftest_fixture_wins_over_the_option(pytester: pytest.Pytester) -> None:
    """A store_factory fixture in the user's conftest is used even when the option is given."""
    pytester.makeconftest(OPT_IN + FACTORY_FIXTURE)
    pytester.makepyfile(
        test_user_store="""
        from convledger import MemoryStore

        def test_the_fixture_is_the_users(store_factory):
            assert store_factory is MemoryStore
        """
    )
    result = pytester.runpytest("--convledger-store", "convledger:Page")
    result.assert_outcomes(passed=1)


def test_missing_store_is_a_clear_error(pytester: pytest.Pytester) -> None:
    """Without a fixture or an option, each conformance test fails instead of guessing a store."""
    pytester.makeconftest(OPT_IN)
    pytester.makepyfile(test_user_store=USER_TEST)
    result = pytester.runpytest("-k", _ledger_check().name)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*store_factory*--convledger-store*"])


def test_unloadable_store_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A --convledger-store that cannot be imported stops pytest with a usage error."""
    pytester.makeconftest(OPT_IN)
    pytester.makepyfile(test_user_store=USER_TEST)
    result = pytester.runpytest("--convledger-store", "no_such_module_anywhere:Store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_undeclared_capability_is_skipped_and_ids_reach_junit(pytester: pytest.Pytester) -> None:
    """A check of an undeclared capability is skipped; its ids are JUnit properties."""
    pytester.makeconftest(
        OPT_IN
        + FACTORY_FIXTURE
        + textwrap.dedent(
            """
            from convledger.store import Capability
            from convledger_conformance import check

            @check("LED-015", capability=Capability.PERSISTENCE)
            def check_user_reopen(context):
                raise AssertionError("must not run: persistence is not declared")
            """
        )
    )
    pytester.makepyfile(test_user_store=USER_TEST)
    result = pytester.runpytest_subprocess("-k", "user_reopen", "--junitxml=junit.xml")
    result.assert_outcomes(skipped=1)
    root = ElementTree.parse(pytester.path / "junit.xml").getroot()
    values = [
        prop.get("value") for prop in root.iter("property") if prop.get("name") == "requirement"
    ]
    assert values == ["LED-015"]


def test_store_without_ledger_fails_the_tests(pytester: pytest.Pytester) -> None:
    """A store that does not declare ledger fails its conformance tests (CAP-003)."""
    pytester.makeconftest(
        OPT_IN
        + textwrap.dedent(
            """
            import pytest
            from convledger import MemoryStore
            from convledger.store import Capability

            class NoLedger(MemoryStore):
                declared = frozenset({Capability.PERSISTENCE})

            @pytest.fixture
            def store_factory():
                return NoLedger
            """
        )
    )
    pytester.makepyfile(test_user_store=USER_TEST)
    result = pytester.runpytest("-k", _ledger_check().name)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CAP-003*"])


BASE_CLASS_USER = """
from convledger import MemoryStore
from convledger_conformance import LedgerConformanceTestCase


class TestMemoryStore(LedgerConformanceTestCase):
    profile = "smoke"

    def make_store(self):
        return MemoryStore()
"""


def test_base_class_is_not_collected_but_subclasses_are(pytester: pytest.Pytester) -> None:
    """pytest collects one test per check from a subclass, and none from the imported base."""
    pytester.makepyfile(test_user_store=BASE_CLASS_USER)
    result = pytester.runpytest("--collect-only", "-q")
    names = sorted(item.name for item in all_checks())
    result.stdout.fnmatch_lines(
        [f"test_user_store.py::TestMemoryStore::test_{name}" for name in names]
    )
    assert f"{len(names)} tests collected" in result.stdout.str()
    assert "LedgerConformanceTestCase::" not in result.stdout.str()


def test_base_class_runs_under_plain_unittest(tmp_path: Path) -> None:
    """python -m unittest runs a subclass's generated test for a check, and it passes."""
    (tmp_path / "test_user_store.py").write_text(textwrap.dedent(BASE_CLASS_USER), "utf-8")
    name = f"test_user_store.TestMemoryStore.test_{_ledger_check().name}"
    result = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Ran 1 test" in result.stderr
    assert " ... ok" in result.stderr


def test_base_class_skips_undeclared_capabilities_under_unittest(tmp_path: Path) -> None:
    """Under unittest, the generated test of an undeclared capability's check is skipped."""
    (tmp_path / "test_user_store.py").write_text(
        textwrap.dedent(
            """
            from convledger.store import Capability
            from convledger_conformance import LedgerConformanceTestCase, check
            from convledger import MemoryStore

            @check("LED-015", capability=Capability.PERSISTENCE)
            def check_user_reopen(context):
                raise AssertionError("must not run: persistence is not declared")

            class TestMemoryStore(LedgerConformanceTestCase):
                def make_store(self):
                    return MemoryStore()
            """
        ),
        "utf-8",
    )
    name = "test_user_store.TestMemoryStore.test_user_reopen"
    result = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "skipped" in result.stderr
