"""The SQLite chapter SQL: the checks of a SQLite file store and its file-level state machine.

Every check here needs capability ``migration`` (opening and migrating
schema version 1 SQLite files), alone or beside the capability it is about:
``migration`` is what says a store is a SQLite file store, so a store on
another engine that declares ``multi_process`` or ``persistence`` is judged
by the engine-neutral checks of those capabilities (``ledger/checks_handles``,
LED-015 .. LED-019) and finds the SQL ids ``not_applicable``.
"""
