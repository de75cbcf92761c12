"""convledger_conformance: the conformance suite of the conversation event ledger.

Three ways to run it against a store factory (a zero-argument callable that
returns a fresh, empty store):

- the command line, ``convledger-conformance --store MODULE:FACTORY``;
- a ``unittest``/pytest subclass of :class:`LedgerConformanceTestCase`;
- :func:`run_suite`, which returns a :class:`Report` with one status per
  requirement id (CAP-004).

The opt-in pytest plugin ``convledger_conformance.pytest_plugin`` is the only
module that imports pytest; importing this package never does.
"""

from convledger_conformance.profiles import PROFILES
from convledger_conformance.registry import (
    CheckContext,
    CheckFailure,
    StoreFactory,
    check,
    expect,
)
from convledger_conformance.report import Report
from convledger_conformance.runner import run_suite
from convledger_conformance.testcase import LedgerConformanceTestCase

__all__ = [
    "PROFILES",
    "CheckContext",
    "CheckFailure",
    "LedgerConformanceTestCase",
    "Report",
    "StoreFactory",
    "check",
    "expect",
    "run_suite",
]
