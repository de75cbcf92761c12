"""A :class:`~convledger.store.LedgerStore` proxy over a subprocess (chapter ``wire.md``).

Theory of operation
-------------------
:class:`WireStoreFactory` starts the server command once, greets it
(``hello``, WIR-006) and then makes one store per call with ``newStore``
(WIR-020): a conformance run's fresh store per Hypothesis example costs one
round trip, not a process start. Each
:class:`~convledger_conformance.wire.store.WireStore` holds a handle and
turns every method of the store interface into one request (WIR-013, WIR-015); its
refusals come back as the typed errors of :mod:`convledger.errors`, built from
the normative kind (WIR-008), so every check, the state machines with their
shrinking and the vectors run unchanged.

Requests go one at a time under a lock (the checks call stores from several
threads; the server answers in order, WIR-005). Every reply is awaited with a
timeout: a server that hangs, exits or answers something that is not a reply
raises a :class:`~convledger_conformance.wire.connection.WireError`, which is
never a store refusal, so no check can take a dead server for a conforming one
(WIR-009). After one such error the
connection is broken and every later call raises at once.

While a request is pending the server may call back the caller's
``authorize`` callback (``get_spill``, ``search``): the proxy answers each
callback frame with ``ok: true`` only for an exactly-True result, ``ok:
false`` otherwise and an error when the callback raises, and waits on with
its timeout restarted (WIR-030 .. WIR-034). A projection definition travels
with its fold by name (:mod:`convledger.projections.named`,
WIR-018).

A value that has no CBOR image (a string with a lone surrogate, a set, an
arbitrary object) cannot be sent; the proxy refuses it with ``invalid_input``
itself (WIR-011), as every conforming store must.

The connection (requests, timeouts, callback frames) is
:mod:`convledger_conformance.wire.connection`; the store proxy
:mod:`convledger_conformance.wire.store`, with its argument and reply
translation in :mod:`convledger_conformance.wire.store_values`.
"""

from __future__ import annotations

import atexit
from collections.abc import Sequence

from convledger.interface import EveryOperation
from convledger_conformance.wire.connection import DEFAULT_TIMEOUT, WireConnection
from convledger_conformance.wire.store import WireStore


class WireStoreFactory:
    """A conformance factory: each call returns a fresh, empty store of one server (WIR-020)."""

    def __init__(self, command: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.command = command
        self.timeout = timeout
        self._connection: WireConnection | None = None
        atexit.register(self.close)

    @property
    def connection(self) -> WireConnection:
        """The server connection, started and greeted on first use."""
        if self._connection is None:
            self._connection = WireConnection(self.command, timeout=self.timeout)
        return self._connection

    def __call__(self) -> EveryOperation:
        """A new empty store (``newStore``), with every operation (the server refuses the rest)."""
        connection = self.connection
        return WireStore(connection, connection.request("newStore", {}))

    def stopped(self) -> str | None:
        """Why the server stopped answering (a timeout, an exit, a broken frame), or None.

        The runner reports every later check ``not_run`` with this reason instead of
        failing each one on a dead connection (as CAP-006 does for the suite's own calls).
        """
        if self._connection is None or self._connection.broken is None:
            return None
        return str(self._connection.broken)

    def close(self) -> None:
        """Stop the server, if it was started."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __repr__(self) -> str:
        return f"WireStoreFactory({self.command!r})"
