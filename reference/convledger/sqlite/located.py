"""Handles onto one SQLite file from another process: the locator's opener (LED-016).

:meth:`SqliteStore.locator` names :func:`open_file_store` (as
``convledger.sqlite:open_file_store``) and, as its argument, the JSON object
``{"store", "path", "synchronous", "busyTimeout"}``: the store class (so a
subclass opens as itself in the other process), the absolute path of the
file, and the two settings that travel. The clock, the eventId generator, the
kind registry and the connection hook are objects of this process; the other
process opens with its defaults.
"""

from __future__ import annotations

import json
import os

from convledger.errors import InvalidInputError, NotFoundError
from convledger.handles import store_class
from convledger.sqlite.store import SqliteStore

_MEMBERS = frozenset({"store", "path", "synchronous", "busyTimeout"})
"""The members of a file locator's argument (:meth:`SqliteStore.locator`)."""


def open_file_store(argument: str) -> SqliteStore:
    """Open the file a locator's ``argument`` names, as the store class it names (LED-016).

    A malformed argument is refused with ``invalid_input``; a file that does
    not exist (any more) with ``not_found``, since opening it would create an
    empty store instead of reaching the one the locator was made for.
    """
    try:
        document = json.loads(argument)
    except (TypeError, ValueError) as error:
        raise _malformed(f"the argument is not JSON text: {error}") from error
    if not isinstance(document, dict) or set(document) != _MEMBERS:
        raise _malformed(f"the argument must be an object with exactly {sorted(_MEMBERS)}")
    store, path = document["store"], document["path"]
    synchronous, busy_timeout = document["synchronous"], document["busyTimeout"]
    if not isinstance(path, str) or not os.path.isabs(path):
        raise _malformed(f"path must be an absolute file path, got {path!r}")
    if not isinstance(synchronous, str):
        raise _malformed(f"synchronous must be text, got {synchronous!r}")
    if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)):
        raise _malformed(f"busyTimeout must be a number of seconds, got {busy_timeout!r}")
    cls = store_class(store, SqliteStore, "open_file_store")
    if not os.path.exists(path):
        raise NotFoundError(f"no SQLite store at {path!r}", requirement="LED-016")
    return cls(path, synchronous=synchronous, busy_timeout=float(busy_timeout))


def _malformed(message: str) -> InvalidInputError:
    return InvalidInputError(f"open_file_store: {message}", requirement="LED-016",
                             field="argument")
