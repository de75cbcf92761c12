"""Deterministic fakes of every host capability, for tests, checks and the demo.

A :class:`FakeProvider` follows a script of outcomes (``"ok"``, ``"fail"``,
``"timeout"``, ``"tool"``, ``"fail_after_tool"``) or draws them from a seeded
random generator; nothing here reads a real clock or the network.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Mapping, Sequence

from convledger.canonical import JsonValue
from convledger.host.capabilities import (
    ProviderFailure,
    ProviderReply,
    ProviderTimeout,
    ToolCall,
)

EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
OUTCOMES = ("ok", "fail", "timeout", "tool", "fail_after_tool")


class FakeClock:
    """A clock that moves only when told (or when slept on)."""

    def __init__(self, start: datetime.datetime = EPOCH) -> None:
        self._now = start

    def now(self) -> datetime.datetime:
        """The fake time."""
        return self._now

    def sleep(self, milliseconds: int) -> None:
        """Advance by ``milliseconds``."""
        self.advance(milliseconds)

    def advance(self, milliseconds: int) -> None:
        """Move the time forward."""
        self._now += datetime.timedelta(milliseconds=milliseconds)


class SequentialIds:
    """Ids ``prefix-1``, ``prefix-2``, ... under a namespace."""

    def __init__(self, namespace: str = "id") -> None:
        self._namespace = namespace
        self._count = 0

    def new_id(self, prefix: str) -> str:
        """The next id."""
        self._count += 1
        return f"{self._namespace}-{prefix}-{self._count}"


class FakeProvider:
    """Replies by script, then by seed; records every call it received."""

    def __init__(
        self, script: Sequence[str] = (), *, seed: int | None = None, provider: str | None = None
    ) -> None:
        for outcome in script:
            if outcome not in OUTCOMES:
                raise ValueError(f"unknown outcome {outcome!r}")
        self._script = list(script)
        self._random = random.Random(seed) if seed is not None else None
        self._provider = provider
        self.calls: list[tuple[str, str, tuple[object, ...]]] = []

    def queue(self, outcomes: Sequence[str]) -> None:
        """Add ``outcomes`` to the end of the script."""
        for outcome in outcomes:
            if outcome not in OUTCOMES:
                raise ValueError(f"unknown outcome {outcome!r}")
        self._script.extend(outcomes)

    def _next(self) -> str:
        if self._script:
            return self._script.pop(0)
        if self._random is not None:
            return self._random.choice(OUTCOMES)
        return "ok"

    def call(
        self, model_id: str, instructions: str, messages: Sequence[object]
    ) -> ProviderReply:
        """Answer the next outcome of the script or the seed."""
        self.calls.append((model_id, instructions, tuple(messages)))
        outcome = self._next()
        number = len(self.calls)
        if outcome == "fail":
            raise ProviderFailure("provider_error")
        if outcome == "timeout":
            raise ProviderTimeout()
        if outcome == "fail_after_tool":
            raise ProviderFailure("stream_broken", after_tool=True)
        if outcome == "tool":
            call = ToolCall("lookup", {"query": f"q{number}"})
            return ProviderReply(f"resp-{number}", "", (call,), self._provider)
        return ProviderReply(f"resp-{number}", f"answer {number}", (), self._provider)


class FakeTimer:
    """Places schedules at the requested time and reports them due by the given clock time."""

    def __init__(self) -> None:
        self._placed: dict[str, datetime.datetime] = {}

    def place(self, schedule_id: str, due: datetime.datetime) -> datetime.datetime:
        """Place at ``due`` exactly."""
        self._placed[schedule_id] = due
        return due

    def cancel(self, schedule_id: str) -> None:
        """Forget the schedule."""
        self._placed.pop(schedule_id, None)

    def due(self, now: datetime.datetime) -> tuple[tuple[str, datetime.datetime], ...]:
        """Every placed schedule whose time is not after ``now``, by time then id."""
        ready = sorted((at, key) for key, at in self._placed.items() if at <= now)
        for _, key in ready:
            del self._placed[key]
        return tuple((key, at) for at, key in ready)


class FakeChildExecutor:
    """Spawns into a set; refuses listed ids; cannot reach listed ids."""

    def __init__(
        self, *, refuse: Sequence[str] = (), unreachable: Sequence[str] = ()
    ) -> None:
        self._refuse = frozenset(refuse)
        self.unreachable = set(unreachable)
        self.running: set[str] = set()
        self.spawned: list[str] = []

    def spawn(self, child_conversation_id: str, budget: Mapping[str, JsonValue]) -> None:
        """Start the child unless it is refused."""
        if child_conversation_id in self._refuse:
            raise RuntimeError(f"spawn of {child_conversation_id} refused")
        self.running.add(child_conversation_id)
        self.spawned.append(child_conversation_id)

    def stop(self, child_conversation_id: str) -> bool:
        """Stop the child; False when unreachable."""
        if child_conversation_id in self.unreachable:
            return False
        self.running.discard(child_conversation_id)
        return True


class FakeSandboxProber:
    """A sandbox offering a fixed set of capabilities."""

    def __init__(self, offered: Sequence[str]) -> None:
        self._offered = frozenset(offered)

    def missing(self, required: Sequence[str]) -> tuple[str, ...]:
        """The required capabilities not offered."""
        return tuple(item for item in required if item not in self._offered)
