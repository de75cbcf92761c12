"""The runtime chapter TRN (capabilities transitions and purge).

The runtime model, the runtime state machine (``machine_*`` rule groups), the race scenarios
and their support, and the checks (``checks_transitions``, ``checks_reads``,
``checks_rare_transitions``, ``checks_replay``, ``checks_purge``).
"""
