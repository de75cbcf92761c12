"""The public API of both packages is frozen: changing it must change this test."""

from __future__ import annotations

import subprocess
import sys

import convledger
import convledger.projections
import convledger.runtime
import convledger.search
import convledger.spills
import convledger_conformance

CONVLEDGER_API = [
    "ERROR_KINDS",
    "SPEC_VERSION",
    "Archive",
    "CanonicalJsonError",
    "Capability",
    "ConflictError",
    "DuplicateError",
    "Envelope",
    "EventDraft",
    "ImportReport",
    "IntegrityError",
    "InvalidInputError",
    "JsonValue",
    "KindRegistry",
    "KindSpec",
    "LedgerError",
    "LedgerStore",
    "MemoryStore",
    "NotFoundError",
    "NotSupportedError",
    "Page",
    "PurgedError",
    "ReplayRefusedError",
    "StoreBase",
    "UnauthorizedError",
    "UnavailableError",
    "Verdict",
    "__version__",
    "admit",
    "decode_archive",
    "default_registry",
    "encode_archive",
    "inspect_archive",
    "replay",
]

RUNTIME_API = [
    "REASON_STATE",
    "Accept",
    "Acquire",
    "Admission",
    "Admitted",
    "Checkpoint",
    "Compact",
    "DraftSummary",
    "Fence",
    "Head",
    "Interrupt",
    "Message",
    "MessageRole",
    "MessageStatus",
    "Operation",
    "Outcome",
    "PurgeOutcome",
    "RecoveryCursor",
    "RecoveryPage",
    "Recover",
    "Run",
    "RunState",
    "RuntimeState",
    "Snapshot",
    "Status",
    "Terminal",
    "Transition",
    "comparable",
    "rebuild",
]

ISSUE5_APIS = {
    "convledger.projections": [
        "BUILT_INS", "STATE_SLOTS", "SUMMARY", "Checkpoint", "ProjectionDefinition",
        "ProjectionStatus",
    ],
    "convledger.spills": ["MAX_SPILL_BYTES", "SpillMetadata"],
    "convledger.search": ["Hit"],
}

CONFORMANCE_API = [
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


def test_convledger_all_is_frozen() -> None:
    """convledger exports exactly the frozen names, and each of them exists."""
    assert sorted(convledger.__all__) == sorted(CONVLEDGER_API)
    for name in convledger.__all__:
        assert hasattr(convledger, name), name


def test_convledger_runtime_all_is_frozen() -> None:
    """convledger.runtime exports exactly the frozen names, and each of them exists."""
    assert sorted(convledger.runtime.__all__) == sorted(RUNTIME_API)
    for name in convledger.runtime.__all__:
        assert hasattr(convledger.runtime, name), name


def test_projection_spill_and_search_apis_are_frozen() -> None:
    """convledger.projections, .spills and .search export exactly the frozen names."""
    for module in (convledger.projections, convledger.spills, convledger.search):
        assert sorted(module.__all__) == sorted(ISSUE5_APIS[module.__name__])
        for name in module.__all__:
            assert hasattr(module, name), name


def test_convledger_conformance_all_is_frozen() -> None:
    """convledger_conformance exports exactly the frozen names, and each of them exists."""
    assert sorted(convledger_conformance.__all__) == sorted(CONFORMANCE_API)
    for name in convledger_conformance.__all__:
        assert hasattr(convledger_conformance, name), name


def test_profiles_are_smoke_ci_thorough() -> None:
    """The exported profiles are smoke, ci and thorough, in that order."""
    assert convledger_conformance.PROFILES == ("smoke", "ci", "thorough")


def test_importing_the_suite_does_not_import_pytest() -> None:
    """Importing convledger_conformance (and running its checks' registry) never imports pytest."""
    program = (
        "import sys\n"
        "import convledger_conformance\n"
        "from convledger_conformance.registry import all_checks\n"
        "list(all_checks())\n"
        "import convledger_conformance.cli\n"
        "sys.exit(1 if 'pytest' in sys.modules else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_importing_a_store_package_leaves_the_validators_for_later() -> None:
    """Issue 34: ``import convledger.sqlite`` (or ``.postgres``) loads neither ``jsonschema``,
    ``jsonschema-rs`` nor the projection built-ins; building a registry, compiling a payload
    schema or reading ``convledger.projections.BUILT_INS`` loads each when first needed."""
    deferred = ("jsonschema", "jsonschema_rs", "convledger.projections.builtins")
    program = (
        "import sys\n"
        "import convledger.sqlite, convledger.postgres\n"
        f"print(sorted(m for m in {deferred!r} if m in sys.modules))\n"
        "from convledger.kinds import default_registry\n"
        "from convledger.fast import rust_validate\n"
        "import convledger.projections as projections\n"
        "registry = default_registry()\n"
        "registry.compiled_accepts('state/set', 1)\n"
        "assert 'convledger.summary' in projections.BUILT_INS\n"
        "print('jsonschema' in sys.modules, 'jsonschema_rs' in sys.modules"
        " or not rust_validate.AVAILABLE)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "True True"]
