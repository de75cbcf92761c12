"""Subcommands of the ``convledger`` command line, one module each.

Each module defines ``register(subparsers)``, which adds its subparser and sets
``run`` (a function of the parsed arguments returning the exit code).
"""
