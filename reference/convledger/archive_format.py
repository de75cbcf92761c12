"""The archive's format name and version (chapter ``archive.md``, ARC-002).

A module of its own so that the fast archive writer (``convledger.fast.archive``)
needs nothing of :mod:`convledger.archive`, which imports the codec seam.
"""

from __future__ import annotations

FORMAT = "convledger.archive"
"""ARC-002: the ``format`` member of every archive."""
FORMAT_VERSION = 1
"""ARC-002: the ``formatVersion`` member this version of the spec writes and reads."""
