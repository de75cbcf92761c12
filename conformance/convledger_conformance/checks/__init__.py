"""The conformance checks, one module per spec chapter; importing this package registers them.

Every module of this package is imported here, found with :mod:`pkgutil`, so a
new module (``sqlite.py`` for the SQLite chapter, say) needs no edit of this
file. Modules whose names start with ``_`` hold helpers and register nothing.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
    importlib.import_module(f"{__name__}.{_module.name}")
