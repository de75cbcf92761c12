"""ERR-002's self-check of the suite (``suite_compares_kinds_only``) finds reads of error text.

Issue 34 lets it skip parsing modules without the keyword ``except``; these tests pin that
the reads it looks for are still found, in every form, and that the skip only skips modules
that cannot hold a handler.
"""

from __future__ import annotations

from convledger_conformance.ledger.checks_errors import _message_reads

READS = '''
try:
    pass
except ValueError as error:
    print(str(error))
try:
    pass
except (KeyError,
        TypeError) as caught:
    print(caught.args, format(caught))
'''


def test_reads_of_error_text_are_found() -> None:
    assert _message_reads("m", READS) == ["m:5", "m:10", "m:10"]


def test_handlers_without_text_reads_pass() -> None:
    source = "try:\n    pass\nexcept ValueError as error:\n    raise RuntimeError from error\n"
    assert _message_reads("m", source) == []


def test_a_module_without_except_has_nothing_to_read() -> None:
    assert _message_reads("m", "def f(error):\n    return str(error), error.args\n") == []
