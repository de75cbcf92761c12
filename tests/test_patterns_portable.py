"""The spec's schema patterns mean the same to Python's ``re`` and to ECMA-262 (KND-006, KND-007).

Every ``pattern`` of ``spec/schemas/*.json`` keeps to the portable subset
(:func:`convledger.patterns.check_portable`), and on a generated corpus (strings
the pattern matches, then each mutated: a final ``"\\n"`` or ``"\\r\\n"``, a
leading space, ASCII digits swapped for Arabic-Indic, fullwidth and astral
mathematical digits, an astral character or a line separator inserted, a
character dropped) ``re.search`` and node's ``RegExp`` with and without the ``u``
flag give the same verdict for every string, and so does Ajv (draft 2020-12, the
kit's options) when the kit is built. The corpus is shown to be sharp: on the
patterns as first published (``\\d`` and ``$``) the engines disagree.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convledger.patterns import END, NotPortableError, check_portable, schema_patterns
from node_kit import built_kit, node_or_skip

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = sorted((ROOT / "spec" / "schemas").glob("*.json"))
DIGITS = {
    "arabic-indic": "\u0660",  # U+0660..U+0669
    "fullwidth": "\uff10",  # U+FF10..U+FF19
    "astral": "\U0001d7ce",  # MATHEMATICAL BOLD DIGIT ZERO, U+1D7CE..U+1D7D7
}
FIRST_PUBLISHED = (
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
    r"^[0-9a-f]{64}$",
)
MAX_SAFE = 2**53 - 1


def spec_patterns() -> list[str]:
    found: set[str] = set()
    for path in SCHEMAS:
        found.update(schema_patterns(json.loads(path.read_text("utf-8"))))
    return sorted(found)


def _generate(items: object, rng: random.Random) -> str:
    """A random string the parsed regex ``items`` (``re._parser``) matches as a whole."""
    out = []
    for op, arg in items:  # type: ignore[attr-defined]
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "IN":
            choices = []
            for kind, value in arg:
                if str(kind) == "LITERAL":
                    choices.append(chr(value))
                elif str(kind) == "RANGE":
                    choices.extend(chr(c) for c in range(value[0], value[1] + 1))
                elif str(value) == "CATEGORY_DIGIT":  # \\d of the first published patterns
                    choices.extend("0123456789")
            if any(str(kind) == "NEGATE" for kind, _ in arg):
                choices = [c for c in "aZ_ -/" if c not in choices]
            out.append(rng.choice(choices))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, sub = arg
            for _ in range(rng.randint(low, min(high, low + 3))):
                out.append(_generate(sub, rng))
        elif name == "SUBPATTERN":
            out.append(_generate(arg[-1], rng))
        elif name == "BRANCH":
            out.append(_generate(rng.choice(arg[1]), rng))
        elif name not in ("AT", "ASSERT_NOT"):  # ^ and the end assert nothing to generate
            raise AssertionError(f"no generator for {name}")
    return "".join(out)


def _matching(pattern: str, rng: random.Random, count: int) -> list[str]:
    """Strings ``pattern`` matches (generated from its parse), and random near-misses."""
    parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
    made = [_generate(parsed, rng) for _ in range(count)]
    assert all(re.search(pattern, text) for text in made), pattern
    return made + [
        "".join(rng.choice("0123456789abcdefTZz:+-.") for _ in range(rng.randint(0, 70)))
        for _ in range(count)
    ]


def _mutations(text: str, rng: random.Random) -> Iterator[str]:
    yield text
    for tail in ("\n", "\r\n", "\r", "\u2028", "\U0001f600", "x"):
        yield text + tail
    yield " " + text
    yield "\n" + text
    for zero in DIGITS.values():
        yield re.sub("[0-9]", lambda m, z=zero: chr(ord(z) + int(m[0])), text)
        if any(c.isdigit() for c in text):
            at = rng.choice([i for i, c in enumerate(text) if c.isdigit()])
            yield text[:at] + chr(ord(zero) + int(text[at])) + text[at + 1:]
    if text:
        at = rng.randrange(len(text))
        yield text[:at] + "\U0001f600" + text[at + 1:]
        yield text[:at] + "\u2028" + text[at:]
        yield text[:at] + text[at + 1:]


def corpus(patterns: list[str], seed: int = 32, count: int = 25) -> list[str]:
    rng = random.Random(seed)
    found: set[str] = {"", "\n", "\U0001f600", "\u0661" * 64}
    for pattern in patterns:
        for text in _matching(pattern, rng, count):
            found.update(_mutations(text, rng))
    return sorted(found)


_NODE_SCRIPT = r"""
const { patterns, strings } = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = {};
for (const p of patterns) {
  const plain = new RegExp(p), unicode = new RegExp(p, 'u');
  out[p] = { plain: strings.map((s) => plain.test(s)),
             unicode: strings.map((s) => unicode.test(s)) };
}
process.stdout.write(JSON.stringify(out));
"""


def _node(
    script: str, payload: object, *, cwd: Path | None = None
) -> dict[str, dict[str, list[bool]]]:
    node = node_or_skip()
    result = subprocess.run([node, "-e", script], input=json.dumps(payload), cwd=cwd,
                            capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr
    answer: dict[str, dict[str, list[bool]]] = json.loads(result.stdout)
    return answer


def _disagreements(patterns: list[str], strings: list[str]) -> list[tuple[str, str, str]]:
    js = _node(_NODE_SCRIPT, {"patterns": patterns, "strings": strings})
    wrong = []
    for pattern in patterns:
        python = [re.search(pattern, text) is not None for text in strings]
        for reading in ("plain", "unicode"):
            wrong.extend((pattern, reading, text) for text, a, b in
                         zip(strings, python, js[pattern][reading], strict=True) if a != b)
    return wrong


def test_every_spec_pattern_is_portable() -> None:
    """KND-006: the subset holds for every pattern of the spec's schemas."""
    patterns = spec_patterns()
    assert len(patterns) >= 3, patterns  # the instant (two spellings) and the sha256
    for pattern in patterns:
        check_portable(pattern)


def test_python_and_ecma_262_agree_on_every_spec_pattern() -> None:
    """KND-006: re.search and RegExp (with and without u) agree on the whole corpus."""
    patterns = spec_patterns()
    strings = corpus(patterns)
    verdicts = {re.search(p, s) is not None for p in patterns for s in strings}
    assert verdicts == {True, False}  # the corpus has matches and non-matches
    assert _disagreements(patterns, strings) == []


def test_the_corpus_finds_the_first_published_patterns_differences() -> None:
    """The corpus is sharp: `$` and `\\d` (the first published spelling) disagree on it."""
    strings = corpus(list(FIRST_PUBLISHED))
    wrong = _disagreements(list(FIRST_PUBLISHED), strings)
    found = {(pattern, text[-1:] == "\n") for pattern, _, text in wrong}
    assert {(FIRST_PUBLISHED[0], True), (FIRST_PUBLISHED[1], True)} <= found
    unicode_digit = [text for pattern, _, text in wrong
                     if pattern == FIRST_PUBLISHED[0] and not text.endswith("\n")]
    assert unicode_digit, "no Unicode-digit instant in the corpus"
    for pattern in FIRST_PUBLISHED:
        with pytest.raises(NotPortableError):
            check_portable(pattern)


_AJV_SCRIPT = r"""
const { Ajv2020 } = require('ajv/dist/2020.js');
const { patterns, strings } = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const ajv = new Ajv2020({ strict: true, validateFormats: false });
const out = {};
for (const p of patterns) {
  const validate = ajv.compile({ type: 'string', pattern: p });
  out[p] = { ajv: strings.map((s) => validate(s)) };
}
process.stdout.write(JSON.stringify(out));
"""


def test_ajv_agrees_with_python_on_every_spec_pattern() -> None:
    """KND-006: Ajv with the kit's options (the u flag) agrees with re.search too."""
    kit = built_kit()
    patterns = spec_patterns()
    strings = corpus(patterns, seed=33)
    js = _node(_AJV_SCRIPT, {"patterns": patterns, "strings": strings}, cwd=kit)
    for pattern in patterns:
        python = [re.search(pattern, text) is not None for text in strings]
        assert python == js[pattern]["ajv"], pattern


@pytest.mark.parametrize("pattern", [
    "^[0-9a-f]{64}" + END, "^a(?:b|c)*?d{2,}e{1,3}" + END, r"[\-a-z_.]+", r"\$\^\.\*\/",
    "^(|x)" + END, "[^0-9]", "a/b", "x{0}",
])
def test_the_subset_admits(pattern: str) -> None:
    check_portable(pattern)
    re.compile(pattern)


@pytest.mark.parametrize("pattern", [
    "^a$", r"\d", r"\D", r"\w", r"\s", r"\b", ".", "\u00e9", "\U0001f600", r"\Z", r"\z",
    r"\A", "(?=a)", "(?<=a)b", "(?<n>a)", r"(a)\1", "(?i)a", "a*+", "a++", "(?>a)",
    r"\p{L}", r"\u0041", r"\x41", "a{", "a{,2}", "a{3,2}", "{2}", "^*", "(?![\\s\\S])*",
    "[]", "[^]", "[z-a]", "[a-z-0]", "[a--b]", "[a&&b]", "[[a]", "[a]]", "(a", "a)",
    "[\\d]", "a\tb", "a***",
])
def test_the_subset_refuses(pattern: str) -> None:
    with pytest.raises(NotPortableError):
        check_portable(pattern)


def _keywords(schema: object) -> Iterator[tuple[str, object]]:
    """(keyword, value) of ``schema`` and its subschemas; property names are not keywords."""
    if isinstance(schema, dict):
        for keyword, value in schema.items():
            yield keyword, value
            if keyword in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                for item in value.values():
                    yield from _keywords(item)
            elif keyword not in ("enum", "const", "default", "examples"):
                yield from _keywords(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _keywords(item)


def _numbers(value: object) -> Iterator[object]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda path: path.name)
def test_no_keyword_where_validators_differ(path: Path) -> None:
    """KND-007: no format, no multipleOf, numbers integers within 2**53-1."""
    document = json.loads(path.read_text("utf-8"))
    schemas = [entry["payloadSchema"] for entry in document["kinds"]] if "kinds" in document \
        else [document]
    seen = set()
    for schema in schemas:
        for keyword, value in _keywords(schema):
            seen.add(keyword)
            assert keyword not in ("format", "multipleOf"), (path.name, keyword)
            if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                           "const", "enum"):
                for number in _numbers(value):
                    assert isinstance(number, int) and abs(number) <= MAX_SAFE, (keyword, number)
    assert "maximum" in seen or path.name != "kinds.json"


def test_a_registry_refuses_a_pattern_outside_the_subset() -> None:
    """KND-006: the reference never rewrites a registry pattern; one outside the subset is a
    programming error when the registry is built, wherever it sits in the schema."""
    from convledger.errors import InvalidInputError
    from convledger.kinds import KindRegistry, KindSpec

    def spec(schema: Any) -> KindSpec:
        return KindSpec("test/kind", 1, "kinds", "a test kind", schema)

    schemas: list[Any] = [
        {"pattern": "^a$"}, {"properties": {"x": {"items": {"pattern": r"\d"}}}},
        {"anyOf": [{"pattern": "."}]}, {"patternProperties": {"^x$": {}}},
    ]
    for schema in schemas:
        with pytest.raises(NotPortableError):
            KindRegistry.of([spec(schema)])
    registry = KindRegistry.of([spec({"properties": {"pattern": {"pattern": "^a" + END}}})])
    registry.check_payload("test/kind", 1, {"pattern": "a"})
    with pytest.raises(InvalidInputError) as caught:
        registry.check_payload("test/kind", 1, {"pattern": "a\n"})
    assert caught.value.requirement == "KND-003"
