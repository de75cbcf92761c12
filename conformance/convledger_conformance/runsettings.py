"""How a conformance run drives Hypothesis: derandomized or seeded, shrinking or not.

A run either derandomizes Hypothesis (the same examples every time, from each
check's name) or gives each check its own seed, :func:`check_seed` of the
run's seed and the check's name: one check run alone (``-k NAME --seed N``)
draws the examples it drew in the whole run. :class:`ProgressLine` is the
live ``[i/N]`` line of a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, TextIO

import hypothesis.configuration
import hypothesis.core
from hypothesis import Phase, settings

from convledger_conformance.registry import Check, CheckContext
from convledger_conformance.report import CheckResult

SEED_BITS: Final = 32
"""A drawn run seed is below 2**SEED_BITS (short enough to type)."""

STORAGE_VARIABLE: Final = "HYPOTHESIS_STORAGE_DIRECTORY"
"""Hypothesis' own setting of its storage folder; when set, the command line leaves it alone."""

_RUN_PROFILE: Final = "convledger-conformance-run"
_SHRINK_PHASES: Final = (Phase.shrink, Phase.explain)


def user_cache() -> Path:
    """Where the command line keeps Hypothesis' files: the user's cache, never the cwd.

    Hypothesis writes a storage folder (its cache of the constants of the code
    under test; the example database is off in every profile) into
    ``./.hypothesis`` by default. ``$XDG_CACHE_HOME/convledger/hypothesis``, or
    ``~/.cache/convledger/hypothesis``.
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "convledger" / "hypothesis"


def use_user_cache() -> None:
    """Point Hypothesis' storage folder at :func:`user_cache` unless the user chose one."""
    if not os.environ.get(STORAGE_VARIABLE):
        hypothesis.configuration.set_hypothesis_home_dir(str(user_cache()))


def check_seed(seed: int, name: str) -> int:
    """The seed of check ``name`` in a run of seed ``seed``: independent of the other checks."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "big")


def seeded(
    call: Callable[[Check, CheckContext], CheckResult], item: Check, context: CheckContext,
    seed: int | None,
) -> CheckResult:
    """``call(item, context)`` with Hypothesis forced to the check's seed (none: untouched)."""
    if seed is None:
        return call(item, context)
    # Hypothesis' own seed override (its pytest plugin's --hypothesis-seed sets the same).
    previous = hypothesis.core.global_force_seed
    hypothesis.core.global_force_seed = check_seed(seed, item.name)  # type: ignore[assignment]
    try:
        return call(item, context)
    finally:
        hypothesis.core.global_force_seed = previous


@contextlib.contextmanager
def hypothesis_defaults(*, derandomize: bool = False, shrink: bool = True) -> Iterator[None]:
    """Derandomize Hypothesis' default settings, or turn shrinking off, for the duration.

    Profiles build their settings on top of the current default, so this
    reaches every check without the checks knowing about it.
    """
    changes: dict[str, Any] = {}
    if derandomize:
        changes.update(derandomize=True, database=None)
    if not shrink:
        changes["phases"] = [phase for phase in Phase if phase not in _SHRINK_PHASES]
    if not changes:
        yield
        return
    previous = settings.get_current_profile_name()
    settings.register_profile(_RUN_PROFILE, settings.get_profile(previous), **changes)
    settings.load_profile(_RUN_PROFILE)
    try:
        yield
    finally:
        settings.load_profile(previous)


class ProgressLine:
    """``[i/N] check (elapsed)`` on a stream: rewritten in place on a TTY, else one line each."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self._started = time.perf_counter()
        self._live = stream is not None and stream.isatty()

    def show(self, number: int, total: int, name: str) -> None:
        """Announce that check ``number`` of ``total`` starts."""
        if self._stream is None:
            return
        elapsed = time.perf_counter() - self._started
        text = f"conformance [{number}/{total}] {name} ({elapsed:.1f}s)"
        self._stream.write(f"\r\x1b[K{text}" if self._live else f"{text}\n")
        self._stream.flush()

    def close(self) -> None:
        """Clear the live line."""
        if self._stream is not None and self._live:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
