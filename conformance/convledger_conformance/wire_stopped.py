"""A wire server that stopped answering: the runner's check of it after each check.

A factory of stores served over the wire may say, through a ``stopped()``
method, why its server stopped answering (a timeout, an exit); the checks after
that are then ``not_run`` with that reason (see :mod:`convledger_conformance.runner`).
In process, a factory has no such method and its stores never stop.
"""

from __future__ import annotations

from convledger_conformance.registry import StoreFactory


def server_stopped(factory: StoreFactory) -> str | None:
    """Why the wire server of ``factory`` stopped answering, or None (in process: never)."""
    stopped = getattr(factory, "stopped", None)
    if not callable(stopped):
        return None
    reason = stopped()
    return reason if isinstance(reason, str) else None


def one_line_text(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    return first[:300]

