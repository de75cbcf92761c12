"""The wire protocol (chapter ``wire.md``): a store served over stdin/stdout.

* :mod:`convledger.wire.frames`: length-prefixed deterministic CBOR frames
  (WIR-001 .. WIR-004);
* :mod:`convledger.wire.values`: the mapping of envelopes, drafts, runtime
  records and refusals to the CBOR data model (WIR-010 .. WIR-018);
* :mod:`convledger.wire.server`: the operation table and the request loop
  (WIR-004 .. WIR-008, WIR-013 .. WIR-024) and the reverse calls of callbacks
  (WIR-030 .. WIR-033).

The client side, a :class:`~convledger.store.LedgerStore` proxy over a
subprocess, lives in the conformance package
(``convledger_conformance.wire.client``).

The public names below are imported from their module on first use (PEP 562), as
:mod:`convledger`'s are: a process that only reads and writes frames (the conformance
suite's echo server of WIR-031 .. WIR-034) does not import the server and every store
module behind it (issue 34).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convledger.lazy_names import lazy_names

if TYPE_CHECKING:
    from convledger.wire.frames import MAX_FRAME, FrameError
    from convledger.wire.server import CARRIED, OPERATIONS, PROTOCOL_VERSION, WireServer

_HOMES = {
    "MAX_FRAME": "frames",
    "FrameError": "frames",
    "CARRIED": "server",
    "OPERATIONS": "server",
    "PROTOCOL_VERSION": "server",
    "WireServer": "server",
}
"""The module of each public name."""


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals(), submodules=True)


__all__ = ["CARRIED", "MAX_FRAME", "OPERATIONS", "PROTOCOL_VERSION", "FrameError", "WireServer"]
