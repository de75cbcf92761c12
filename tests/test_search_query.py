"""The words of a query and the FTS5 expression the SQLite store writes (SQL-065, SRC-020).

The spec's own example, and the word rule checked against ``str.isalnum`` on every code
point, so that an implementer reading SQL-065 cuts the same words.
"""

from __future__ import annotations

import sys

import pytest

from convledger.errors import InvalidInputError
from convledger.search.query import tokens
from convledger.sqlite.search import _within


def test_the_spec_example_of_sql_065() -> None:
    assert _within("c1", tokens('tea "time"')) == 'scope : "6331" AND body : ("tea" AND "time")'


def test_a_word_is_a_run_of_alphanumeric_characters() -> None:
    """SQL-065: every code point (surrogates aside) joins a word iff str.isalnum() says so."""
    for point in range(sys.maxunicode + 1):
        if 0xD800 <= point <= 0xDFFF:
            continue
        char = chr(point)
        if char.isalnum():
            assert tokens(f"a{char}b") == (f"a{char}b",), hex(point)
        else:
            assert tokens(f"a{char}b") == ("a", "b"), hex(point)


def test_syntax_only_separates() -> None:
    """SRC-020: operators and quotes of FTS5 are separators, never syntax."""
    assert tokens('NEAR(a* ^b) OR body:"c"-d') == ("NEAR", "a", "b", "OR", "body", "c", "d")
    with pytest.raises(InvalidInputError):
        tokens('"* ^ ()"')  # SRC-021: no letter or digit
