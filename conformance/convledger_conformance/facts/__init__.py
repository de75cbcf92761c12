"""The host chapters FCT and PRV (capability fact_rows): the host state machine, the invariants
it keeps, and the checks (``checks_facts``, ``checks_provider``).
"""
