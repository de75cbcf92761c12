"""Capability ``multi_process``: several handles onto one store (``ledger.md``, LED-016 .. LED-019).

A store that declares ``multi_process`` gives two things, whatever its engine:

* :meth:`MultiProcessStore.open_handle`: another independent handle onto the same
  store, in this process (a new connection, say), declaring the same
  capabilities;
* :meth:`MultiProcessStore.locator`: a :class:`StoreLocator`, what another process
  needs to open the same store: an importable ``module:callable`` and one text
  argument for it. :func:`open_located` imports the opener and calls it.

A locator is trusted configuration, exactly like ``--store module:callable`` of
the conformance CLI: opening one imports the module it names. The SQLite store
names :func:`convledger.sqlite.open_file_store` and its file; a server-database
store would name its own opener and a connection description.

The promises the handles keep (seqs 1..n and every eventId once across
handles and processes, exports of whole batches, fresh reads after another
handle's write) are chapter LED's; the conformance checks of
``convledger_conformance.ledger.checks_handles`` drive them through this interface
only.
"""

from __future__ import annotations

import importlib
import json
from typing import Protocol, TypeVar, cast, runtime_checkable

import attrs

from convledger.errors import InvalidInputError
from convledger.store import LedgerStore

LOCATOR_REQUIREMENT = "LED-016"
"""The requirement a malformed locator breaks."""


@attrs.frozen
class StoreLocator:
    """What another process needs to open the same store (LED-016).

    ``opener`` is ``module:callable`` (the callable may be a dotted attribute
    path inside the module); ``argument`` is the one text the opener takes.
    """

    opener: str
    argument: str

    def to_json(self) -> str:
        """The locator as one line of JSON (for an argv entry or a pipe)."""
        return json.dumps({"opener": self.opener, "argument": self.argument}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StoreLocator:
        """The locator :meth:`to_json` wrote; anything else is ``invalid_input``."""
        try:
            document = json.loads(text)
        except (TypeError, ValueError) as error:
            raise _malformed(f"a locator is not JSON text: {error}", "locator") from error
        if not isinstance(document, dict) or set(document) != {"opener", "argument"}:
            raise _malformed("a locator is a JSON object with exactly opener and argument",
                             "locator")
        return checked(cls(opener=document["opener"], argument=document["argument"]))


@runtime_checkable
class MultiProcessStore(LedgerStore, Protocol):
    """Capability ``multi_process``: more handles onto one store, here and elsewhere (LED-016)."""

    def open_handle(self) -> LedgerStore:
        """Another independent handle onto the same store, in this process."""
        ...

    def locator(self) -> StoreLocator:
        """What another process needs to open a handle onto the same store."""
        ...


def checked(locator: object) -> StoreLocator:
    """``locator`` if it is a well-formed :class:`StoreLocator`, else ``invalid_input``."""
    if not isinstance(locator, StoreLocator):
        raise _malformed(f"expected a StoreLocator, got {type(locator).__name__}", "locator")
    if not isinstance(locator.argument, str):
        raise _malformed("a locator's argument must be text", "argument")
    if not isinstance(locator.opener, str):
        raise _malformed("a locator's opener must be text 'module:callable'", "opener")
    module, colon, attribute = locator.opener.partition(":")
    if (
        not colon
        or not _dotted(module)
        or not _dotted(attribute)
    ):
        raise _malformed(
            f"a locator's opener must be 'module:callable', got {locator.opener!r}", "opener"
        )
    return locator


def open_located(locator: StoreLocator) -> LedgerStore:
    """Open a handle onto the store ``locator`` names: import its opener, call it (LED-016).

    A malformed locator, an opener that cannot be imported or is not callable,
    and an opener that returns something other than a store are refused with
    :class:`~convledger.errors.InvalidInputError`; the opener's own refusals
    (a malformed argument, a store that cannot be opened) pass through.
    """
    module_name, _, attribute = checked(locator).opener.partition(":")
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as error:
        raise _malformed(f"the opener's module {module_name!r} cannot be imported: {error}",
                         "opener") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as error:
            raise _malformed(f"{locator.opener!r} names nothing", "opener") from error
    if not callable(target):
        raise _malformed(f"{locator.opener!r} is not callable", "opener")
    store = target(locator.argument)
    if not isinstance(store, LedgerStore):
        raise _malformed(f"{locator.opener!r} returned {type(store).__name__}, not a store",
                         "opener")
    return store


_Store = TypeVar("_Store", bound=type)


def store_class(name: object, base: _Store, opener: str) -> _Store:
    """The store class a locator's argument names as ``module:qualname``; a subclass of ``base``.

    For openers whose argument names the class to open the store as (so a
    subclass opens as itself in another process); anything else is refused
    with ``invalid_input`` naming ``opener`` (LED-016).
    """
    if not isinstance(name, str) or name.count(":") != 1:
        raise _argument(opener, f"store must be 'module:class', got {name!r}")
    module_name, qualname = name.split(":")
    try:
        found: object = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError) as error:
        raise _argument(opener, f"store {name!r} cannot be imported: {error}") from error
    if not isinstance(found, type) or not issubclass(found, base):
        raise _argument(opener, f"store {name!r} is not a {base.__name__} class")
    return cast(_Store, found)


def _argument(opener: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{opener}: {message}", requirement=LOCATOR_REQUIREMENT,
                             field="argument")


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _malformed(message: str, field: str) -> InvalidInputError:
    return InvalidInputError(message, requirement=LOCATOR_REQUIREMENT, field=field)
