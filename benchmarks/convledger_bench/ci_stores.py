"""The stores the project's own CI gate measures (``.ci/run``, issue 34).

``sqlite_normal``: the reference SQLite store on a fresh temporary file with
``synchronous=NORMAL`` (WAL; a commit does not wait for fsync). The gate
measures it against the in-memory floor (``--floor memory``): both sides are
then the CPU work of the same calls, which is what a code change moves,
without the fsync time that a loaded runner varies by a factor of two from
one commit to the next. The durable figures (``synchronous=FULL`` against
the minimal SQLite transaction) stay what ``bench`` measures by default.
"""

from __future__ import annotations

from convledger.sqlite import SqliteStore
from convledger.sqlite.factories import file_store_factory

_MAKE = file_store_factory(synchronous="NORMAL")


def sqlite_normal() -> SqliteStore:
    """A fresh SQLite store (own temporary file, removed on close), ``synchronous=NORMAL``."""
    return _MAKE()
