"""The galleries of deliberately broken stores, one module per chapter, and one record shape.

Each broken store has exactly ONE bug, a mistake a real store could make, and
is listed as a :class:`BrokenStore`: its chapter, its class name, the
requirement ids a conformance run must report failed for it, a maker of fresh
instances, and, when only some check catches it (a state machine), that
check's name (the lesson of Hypothesis' own ``bad_machines``: a tester is
tested by the bugs it catches). A broken store is a subclass of a reference
store that overrides the hooks of its capability bases (or public
operations) and calls ``super()``; where a bug cannot be said without the
store's data the class says so in its docstring.

The galleries: :mod:`galleries.ledger` (the ledger core on MemoryStore),
:mod:`galleries.sqlite` (the SQLite store's DDL, opening, migration,
transactions and handles, and its state-machine-only stores),
:mod:`galleries.postgres` (the PostgreSQL store's server-only bugs),
:mod:`galleries.runtime` (transitions and purge), :mod:`galleries.projections`,
:mod:`galleries.spills`, :mod:`galleries.search`, :mod:`galleries.durability`
(crash-broken and race-broken SQLite stores, chapter DUR), :mod:`galleries.boundaries`
(stores refusing a value exactly at its limit, issue 20), :mod:`galleries.freshness`
(SQLite stores caching what a handle read, LED-019, issue 20), :mod:`galleries.positions`
(catch-ups mishandling an event at the first or last seq or past a page, issue 20),
:mod:`galleries.helpers` (stores breaking a call the suite makes for itself, CAP-006), and
:mod:`galleries.facts`
(broken hosts of chapters PRV and FCT: their ``factory`` is the host class and
their ``checks`` the check bodies that catch them).

``scripts/kill_table.py`` runs :func:`cases` for the kill table,
``scripts/record_shrunk_vectors.py`` records their shrunk failures as trace
vectors, and ``tests/test_shrunk_vectors.py`` finds the store a shipped
shrunk trace was recorded on by its class name (``shrunk/<name>/...``).

This package is light to import (the conformance registry is imported when
checks are selected): the second process of the SQLite state machine imports
a broken store class from :mod:`galleries.sqlite`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from convledger_conformance.registry import Check

STORE_CHAPTERS = (
    "ledger", "sqlite", "postgres", "runtime", "projections", "spills", "search", "limits",
    "boundaries", "freshness", "positions", "helpers", "gaps",
    "durability",
)
"""The galleries of broken stores, in kill-table order."""
HOST_CHAPTERS = ("facts",)
"""The galleries of broken hosts (run by their check bodies, not by ``run_suite``)."""


@attrs.frozen
class BrokenStore:
    """One broken store of a gallery: where it belongs, what it breaks, how to make one."""

    chapter: str
    """The gallery (a module of this package) it belongs to."""
    name: str
    """Its class name: the kill table, the test ids and the shrunk vectors name it so."""
    catches: tuple[str, ...]
    """The requirement ids a conformance run must report failed for it."""
    factory: Callable[..., Any]
    """A zero-argument maker of fresh stores; for a broken host, the host class."""
    checks: tuple[str, ...] = ()
    """The check names that catch it, when these are not the focused checks of ``catches``
    (a state machine); for a broken host, the check bodies (``BODIES``) to run it with."""

    def selected(self) -> tuple[Check, ...]:
        """The checks to run against it: those named by ``checks``, else the focused ones."""
        from convledger_conformance.registry import all_checks
        from kill_table import focused

        if self.checks:
            return tuple(item for item in all_checks() if item.name in self.checks)
        return tuple(focused(self.catches))


def broken(
    chapter: str,
    cls: type[Any],
    *catches: str,
    factory: Callable[..., Any] | None = None,
    checks: tuple[str, ...] = (),
) -> BrokenStore:
    """The record of ``cls``: named by the class, made by ``factory`` (default: the class)."""
    return BrokenStore(chapter, cls.__name__, tuple(catches),
                       cls if factory is None else factory, checks)


def gallery(chapter: str) -> tuple[BrokenStore, ...]:
    """The records of one chapter's gallery."""
    import importlib

    found: tuple[BrokenStore, ...] = importlib.import_module(f"galleries.{chapter}").BROKEN
    return found


def cases() -> Iterator[BrokenStore]:
    """Every broken store of every store gallery (the broken hosts excepted)."""
    for chapter in STORE_CHAPTERS:
        yield from gallery(chapter)


def hosts() -> Iterator[BrokenStore]:
    """Every broken host."""
    for chapter in HOST_CHAPTERS:
        yield from gallery(chapter)


__all__ = ["HOST_CHAPTERS", "STORE_CHAPTERS", "BrokenStore", "broken", "cases", "gallery",
           "hosts"]
