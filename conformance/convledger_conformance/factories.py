"""Where a run's stores come from: ``--store MODULE:FACTORY`` or a ``--command`` server.

Shared by ``convledger-conformance``, its ``replay`` subcommand and the pytest
plugin.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Final, cast

from convledger_conformance.registry import StoreFactory
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import WireError

DEFAULT_STORE: Final = "convledger.sqlite:new_file_store"
"""The store validated when no ``--store`` is given: the embedded reference store."""
EXIT_SERVER: Final = 3
"""The exit status when the ``--command`` server cannot be started."""


class FactoryLoadError(ValueError):
    """``MODULE:FACTORY`` does not name an importable, callable store factory."""


def load_factory(spec: str) -> StoreFactory:
    """Import ``module:attr`` (attr may be dotted) and return it if it is callable.

    The working directory comes first on ``sys.path`` (as with ``python -m`` and
    pytest), so ``--store mystore:make_store`` finds ``./mystore.py``.
    """
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise FactoryLoadError(f"expected MODULE:FACTORY, got {spec!r}")
    try:
        target: object = importlib.import_module(module_name)
    except Exception as error:  # the user's module may fail in any way while importing
        raise FactoryLoadError(f"cannot import module {module_name!r}: {error}") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as error:
            raise FactoryLoadError(f"{module_name!r} has no attribute {attribute!r}") from error
    if not callable(target):
        raise FactoryLoadError(f"{spec} is not callable (it is {type(target).__name__})")
    return cast(StoreFactory, target)


def open_factory(
    parser: argparse.ArgumentParser, store: str, command: str | None, timeout: float
) -> tuple[StoreFactory, str, WireStoreFactory | None] | int:
    """The factory of ``--store`` or ``--command``, its name and the wire client if any.

    A usage error exits through ``parser``; a server that cannot be started
    prints one line and gives :data:`EXIT_SERVER`.
    """
    if command is None:
        try:
            return load_factory(store), store, None
        except FactoryLoadError as error:
            parser.error(f"--store: {error}")
    if store != DEFAULT_STORE:
        parser.error("--store and --command exclude each other")
    if timeout <= 0:
        parser.error("--timeout must be positive")
    wire = WireStoreFactory(command, timeout=timeout)
    try:
        hello = wire.connection.hello
    except WireError as error:
        wire.close()
        print(f"convledger-conformance: cannot start the store server {command!r}: {error}",
              file=sys.stderr)
        return EXIT_SERVER
    return wire, f"{command} (wire: {hello.get('server')}, spec {hello.get('spec')})", wire
