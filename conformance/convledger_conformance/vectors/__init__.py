"""The shipped vectors: the trace format and replay (``traces``), performing one step of a
trace (``operations``), the curated corpus and its recording command (``corpus``), the stores
that log a check's calls (``recording``), recorded failures (``failures``), the inventory of
vector files (``files``) and the replay checks (``checks``).

The data folders ``archives/`` and ``traces/`` beside these modules are the package's copies
of spec/vectors.
"""
