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
"""

from convledger.wire.frames import MAX_FRAME, FrameError
from convledger.wire.server import CARRIED, OPERATIONS, PROTOCOL_VERSION, WireServer

__all__ = ["CARRIED", "MAX_FRAME", "OPERATIONS", "PROTOCOL_VERSION", "FrameError", "WireServer"]
