"""The capability ledger, with persistence and multi_process: chapters LED, ENV, CAN, KND, RPL,
ERR, CAP and ARC.

The executable model and the ledger state machine (assembled from the ``machine_*`` rule
groups), the strategies every chapter draws from, the archive cases, the probes of
undeclared capabilities, the worker process of other handles, and the checks (``checks_*``).
"""
