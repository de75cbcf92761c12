"""Binary spill objects with authorization recheck (chapter ``spills.md``).

Read in this order: :mod:`objects` (what a spill is, the checks of a put),
:mod:`operations` (the store methods and their primitives), :mod:`companion`
(spill metadata in archives), :mod:`bundle` (archive plus bytes in one CBOR
file).
"""

from convledger.spills.objects import MAX_SPILL_BYTES, SpillMetadata

__all__ = ["MAX_SPILL_BYTES", "SpillMetadata"]
