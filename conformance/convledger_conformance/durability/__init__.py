"""Chapter DUR: kills of a store's process and concurrent writers, checked from outside.

``workload`` drives a random workload and records every acknowledgement,
``verify`` checks a restarted store against that record (DUR-001 ..
DUR-008), ``history`` checks concurrent histories for linearizability
(DUR-010 .. DUR-013), ``target`` starts a server process on a location,
``crash`` runs rounds of server processes that it kills
(``convledger-conformance crash``, ``cli``), ``concurrency`` runs K clients at
once, and ``checks`` registers
the in-process checks (a store's locator opened in server processes).
"""
