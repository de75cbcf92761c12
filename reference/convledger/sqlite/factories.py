"""Store factories for conformance runs: a fresh, empty store on every call.

A conformance run takes a factory, never a shared instance (style rule 7):
each Hypothesis example gets its own store. :func:`file_store_factory` puts
each store in its own new directory under one temporary parent and removes
that directory when the store closes; the parent goes when the process exits
(processes forked from it, ``--jobs``, make their directories in the same parent,
under names the file system keeps unique).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from convledger.sqlite.store import SqliteStore

StoreMaker = Callable[[], SqliteStore]


def file_store_factory(**options: Any) -> StoreMaker:
    """A maker of stores on new temporary files; ``options`` go to :class:`SqliteStore`."""
    parent = Path(tempfile.mkdtemp(prefix="convledger-sqlite-"))
    atexit.register(shutil.rmtree, parent, True)

    def make() -> SqliteStore:
        # a name mkdtemp makes unique on the file system, not a counter: processes forked
        # from this one (--jobs) share the counter's state but never a directory
        directory = Path(tempfile.mkdtemp(prefix="store-", dir=parent))
        return SqliteStore(
            directory / "ledger.sqlite",
            on_close=lambda: shutil.rmtree(directory, ignore_errors=True),
            **options,
        )

    return make


def memory_store_factory(**options: Any) -> StoreMaker:
    """A maker of stores on SQLite ``:memory:`` databases (capability ``ledger`` only)."""

    def make() -> SqliteStore:
        return SqliteStore(":memory:", **options)

    return make


_DEFAULT_FILE_MAKER: StoreMaker | None = None


def new_file_store() -> SqliteStore:
    """A fresh store on a new temporary file: ``--store convledger.sqlite:new_file_store``.

    CAP-005: a new file per call, so each store is new, empty and shares nothing.
    """
    global _DEFAULT_FILE_MAKER
    if _DEFAULT_FILE_MAKER is None:
        _DEFAULT_FILE_MAKER = file_store_factory()
    return _DEFAULT_FILE_MAKER()


def new_memory_store() -> SqliteStore:
    """A fresh store on ``:memory:``: ``--store convledger.sqlite:new_memory_store``."""
    return SqliteStore(":memory:")
