"""Chapter FLT: fault injection in process, for Python stores (``spec/faults.md``).

:mod:`.plans` holds the seam's suite side: the :class:`~.plans.FaultInjectable`
protocol a store opts in with, and the plans that count and fail write points;
:mod:`.digest` the state digest a refused write must leave unchanged;
:mod:`.scenarios` the write operations, one per chapter, and the sweep that
fails each of their write points once; :mod:`.checks` the checks.
"""
