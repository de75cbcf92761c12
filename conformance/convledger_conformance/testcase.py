"""A ``unittest`` base class: a store's conformance test is a subclass plus one factory hook.

::

    class TestMyStore(LedgerConformanceTestCase):
        profile = "ci"

        def make_store(self) -> LedgerStore:
            return MyStore(tempfile.mkdtemp())

Every registered check becomes one test method ``test_<check name>`` of the
subclass, so ``python -m unittest`` and pytest (``-k <check name>``) both run
them one by one. ``make_store`` is the factory: it is called for every
Hypothesis example and must return a fresh, empty store. A check of a
capability the store does not declare is skipped (CAP-001); a store that does
not declare ``ledger`` fails every test (CAP-003).

The base class itself holds no test and is not collected by pytest
(``__test__ = False``); subclasses are, unless they set ``__test__`` themselves.
This module does not import pytest.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable
from typing import Any, ClassVar

from convledger.store import LedgerStore
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.runner import context_for
from convledger_conformance.runsettings import hypothesis_defaults


class LedgerConformanceTestCase(unittest.TestCase):
    """Base of a store's conformance tests; implement :meth:`make_store`."""

    __test__: ClassVar[bool] = False
    profile: ClassVar[str] = "ci"
    """The Hypothesis profile the checks run with (smoke, ci or thorough)."""
    derandomize: ClassVar[bool] = False
    """Run the same examples every time."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Collect the subclass and give it one ``test_<name>`` method per check."""
        super().__init_subclass__(**kwargs)
        if "__test__" not in cls.__dict__:
            cls.__test__ = True
        for item in all_checks():
            name = f"test_{item.name}"
            if name not in cls.__dict__:
                setattr(cls, name, _test_method(item, owner=cls.__qualname__))

    def make_store(self) -> LedgerStore:
        """Return a fresh, empty store; called once per Hypothesis example."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_store()")

    def run_conformance_check(self, item: Check) -> None:
        """Run one check against :meth:`make_store`; skip it when its capability is absent."""
        context = context_for(item, self.make_store, profile=self.profile)
        if context is None:
            needed = ", ".join(c.value for c in (item.capability, *item.also))
            self.skipTest(f"needs capabilities {needed}, which the store does not all declare")
        with hypothesis_defaults(derandomize=self.derandomize):
            item.run(context)


def _test_method(item: Check, *, owner: str) -> Callable[[LedgerConformanceTestCase], None]:
    def test(self: LedgerConformanceTestCase) -> None:
        self.run_conformance_check(item)

    test.__name__ = f"test_{item.name}"
    test.__qualname__ = f"{owner}.test_{item.name}"
    test.__doc__ = f"{item.doc or item.name} ({', '.join(item.ids)})"
    return test
