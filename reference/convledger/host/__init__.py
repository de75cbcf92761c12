"""Injected host capabilities, their deterministic fakes and a small step loop.

Chapters ``provider.md`` (PRV) and ``facts.md`` (FCT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convledger.host.capabilities import (
    ChildExecutor,
    Clock,
    IdGenerator,
    ModelProvider,
    ProviderFailure,
    ProviderReply,
    ProviderTimeout,
    SandboxProber,
    Timer,
    ToolCall,
)
from convledger.host.fakes import (
    FakeChildExecutor,
    FakeClock,
    FakeProvider,
    FakeSandboxProber,
    FakeTimer,
    SequentialIds,
)

if TYPE_CHECKING:
    from convledger.host.loop import Host, HostError, children_of, events_of

_LOOP = frozenset({"Host", "HostError", "children_of", "events_of"})


def __getattr__(name: str) -> object:
    """The loop's names, imported on first use: the store imports :mod:`convledger.host.rows`."""
    if name in _LOOP:
        from convledger.host import loop

        return getattr(loop, name)
    raise AttributeError(name)

__all__ = [
    "ChildExecutor", "Clock", "FakeChildExecutor", "FakeClock", "FakeProvider",
    "FakeSandboxProber", "FakeTimer", "Host", "HostError", "IdGenerator", "ModelProvider",
    "ProviderFailure", "ProviderReply", "ProviderTimeout", "SandboxProber", "SequentialIds",
    "Timer", "ToolCall", "children_of", "events_of",
]
