"""Full-text search, default-denied across conversations (chapter ``search.md``).

Read :mod:`query` (user text to a literal FTS5 query), then :mod:`operations`
(the store method, who may see what). The SQLite store answers it with its
FTS5 index (``convledger.sqlite.search``); the in-memory store declares the
capability absent.
"""

from convledger.search.operations import Hit

__all__ = ["Hit"]
