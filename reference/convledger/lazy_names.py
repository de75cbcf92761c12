"""A package's public names, imported from their modules on first use (PEP 562).

``convledger``, ``convledger.wire`` and ``convledger.projections`` keep a table
of the module each public name comes from and import it only when the name is
first read, so a process that needs one part (``python -m convledger canon``, a
wire server of the in-memory store, a child of a kill check) does not import
the others: the conformance suite starts such processes by the dozen (issue 34).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping


def lazy_names(
    package: str,
    homes: Mapping[str, str],
    namespace: MutableMapping[str, object],
    *,
    submodules: bool = False,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``globals()`` is ``namespace``).

    A name of ``homes`` is imported from ``package.<home>`` and kept in the
    namespace; with ``submodules`` any other name is tried as a submodule.
    """

    def get(name: str) -> object:
        home = homes.get(name)
        if home is None:
            if submodules:
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as error:
                    if error.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def listing() -> list[str]:
        public = namespace.get("__all__", ())
        return sorted({*namespace, *(public if isinstance(public, (list, tuple)) else ())})

    return get, listing
