"""Speed-ups that cost clarity, each checked against the clear code it replaces.

The modules here are never the definition of anything: each names the clear
module it must agree with byte for byte, and a property test compares the two
on generated values (house rule: optimized code lives apart, as
``ethereum_optimized`` does beside the readable specs).

Nothing in the reference imports this package but :mod:`convledger.codec`, the
one seam that binds each hot-path function to the fast code here or to the
clear code it replaces (``CONVLEDGER_CODEC=clear`` runs the reference without
this package); the conformance suite's models, machines and checks never use
it (``tests/test_codec_seam.py`` enforces both). The one exception is the
``canonical`` figure of ``convledger_conformance.bench``, which measures the
fast encoder on purpose.

``convledger.fast.canonical``: :func:`~convledger.fast.canonical.encode`, the
same bytes and refusals as :func:`convledger.canonical.encode` (CAN-001).

``convledger.fast.decode``: :func:`~convledger.fast.decode.decode_stored`, the
value :func:`convledger.canonical.decode` gives for every canonical text, at
the speed of the C scanner (the SQLite read path, ``tests/test_fast_decode.py``).

``convledger.fast.archive``: :func:`~convledger.fast.archive.encode_stored`, the
archive bytes of ``encode_archive`` written from stored rows without decoding
the payloads (``tests/test_fast_archive.py``).

``convledger.fast.strict``: ``orjson``'s strictest options, msgspec with a float hook
that admits only CAN-005 literals, and the member-order check: the pieces with which
two C calls prove a text canonical (``decode_canonical`` of ``convledger.fast.decode``)
or a payload's bytes and copy (``convledger.fast.payload``).

``convledger.fast.payload``: :func:`~convledger.fast.payload.encode_payload_copied`, a
payload's canonical bytes (with LIM-005) and, where the strict path proves them, the
copy the strict decoder reads from them (LED-014, ``tests/test_fast_payload.py``).

``convledger.fast.validate``: :func:`~convledger.fast.validate.compile_accepts`, a
payload schema compiled once (``fastjsonschema``) into a predicate that accepts
only what ``jsonschema`` accepts; the append path asks the definition about
everything else (``tests/test_fast_validate.py``).

``convledger.fast.rust_validate``: the same predicate compiled by ``jsonschema-rs`` (the
optional extra ``convledger[fast]``), which ``compile_accepts`` prefers when it is installed.

``convledger.fast.append``: :func:`~convledger.fast.append.fused`, the checks of
:func:`convledger.batch.validated_batch` in one pass over the drafts; any batch the
pass does not accept at once is handed to the clear function (``tests/test_fast_append.py``).
"""

from convledger.fast.canonical import encode

__all__ = ["encode"]
