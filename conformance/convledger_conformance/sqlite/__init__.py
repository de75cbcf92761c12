"""The SQLite chapter SQL: the checks of the reference SQLite store and its file-level state
machine (``machine``).
"""
