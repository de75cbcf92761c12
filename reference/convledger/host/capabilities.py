"""The host capabilities injected into the runtime (chapter ``facts.md``, ``provider.md``).

The ADR makes timer placement, child execution and sandboxes host
capabilities: the runtime never owns a clock, a thread, a process or a
sandbox; it receives them. Each is a small protocol here; deterministic fakes
live in :mod:`convledger.host.fakes`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from convledger.canonical import JsonValue


class Clock(Protocol):
    """Time for event stamps, schedule lateness and retry delays."""

    def now(self) -> datetime.datetime:
        """The current time, timezone-aware."""
        ...

    def sleep(self, milliseconds: int) -> None:
        """Wait ``milliseconds`` (a fake clock just advances)."""
        ...


class IdGenerator(Protocol):
    """Fresh ids for events, runs and messages."""

    def new_id(self, prefix: str) -> str:
        """A new id, unique for this generator, starting with ``prefix``."""
        ...


@attrs.frozen
class ToolCall:
    """A tool the model asked for."""

    name: str
    arguments: dict[str, JsonValue]


@attrs.frozen
class ProviderReply:
    """A completed provider attempt (PRV-010): the provider's id, text and tool calls."""

    id: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str | None = None


class ProviderFailure(Exception):
    """The provider call failed; ``after_tool`` when a tool already executed (PRV-013)."""

    def __init__(self, reason: str, *, after_tool: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.after_tool = after_tool


class ProviderTimeout(ProviderFailure):
    """The provider call timed out."""

    def __init__(self) -> None:
        super().__init__("timeout")


class ModelProvider(Protocol):
    """One model call: instructions and bodies in, a reply out or a failure raised."""

    def call(
        self, model_id: str, instructions: str, messages: Sequence[object]
    ) -> ProviderReply:
        """Answer or raise :class:`ProviderFailure` / :class:`ProviderTimeout`."""
        ...


class Timer(Protocol):
    """Schedule placement (FCT-010 .. FCT-013)."""

    def place(self, schedule_id: str, due: datetime.datetime) -> datetime.datetime:
        """Place ``schedule_id`` and return the time it was placed at."""
        ...

    def cancel(self, schedule_id: str) -> None:
        """Remove ``schedule_id``; it will not come due."""
        ...

    def due(self, now: datetime.datetime) -> tuple[tuple[str, datetime.datetime], ...]:
        """Remove and return the schedules due at ``now`` with their placed times, in order."""
        ...


class ChildExecutor(Protocol):
    """Runs child conversations (FCT-020 .. FCT-023)."""

    def spawn(self, child_conversation_id: str, budget: Mapping[str, JsonValue]) -> None:
        """Start the child or raise to refuse."""
        ...

    def stop(self, child_conversation_id: str) -> bool:
        """Stop the child; False when it cannot be reached (recorded as ``lost``)."""
        ...


class SandboxProber(Protocol):
    """Reports which required sandbox capabilities are missing (FCT-030)."""

    def missing(self, required: Sequence[str]) -> tuple[str, ...]:
        """The members of ``required`` this sandbox lacks."""
        ...
