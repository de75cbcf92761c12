"""The requirement index: every normative id of ``spec/``, as data.

The markdown chapters are the source. Each normative sentence is one list item
``- **ID** sentence``; its level is the strongest RFC 2119 keyword it uses.
``requirements.json`` (package data) is generated from them with::

    python -m convledger_conformance.requirements spec/ --write

and ``tests/test_traceability.py`` fails when the two disagree. The command also copies
``spec/limits.json`` into the package (``limits.json``, which
:mod:`convledger_conformance.spec_values` reads).
"""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from pathlib import Path

import attrs

SPEC_VERSION = "0.1"

_ITEM = re.compile(r"^- \*\*(?P<id>[A-Z]{3}-\d{3})\*\* (?P<text>.+)$")
_LEVELS = (("MUST", re.compile(r"\bMUST\b")), ("SHOULD", re.compile(r"\bSHOULD\b")),
           ("MAY", re.compile(r"\bMAY\b")))
_MARKUP = re.compile(r"[`*]")


REFERENCE_ONLY_CHAPTERS = frozenset({"postgres.md"})
"""Chapters whose rules bind one reference store's engine (spec/README.md, Conventions).

No capability of the closed table of chapter CAP singles such a store out, so
no conformance check can be confined to it: its ids are not part of a
conformance report (CAP-004) and each is named by a test of the reference
instead (``tests/test_traceability.py``).
"""


@attrs.frozen
class Requirement:
    """One normative sentence."""

    id: str
    chapter: str
    level: str
    summary: str
    retired: bool = False

    @property
    def reference_only(self) -> bool:
        """Whether the id binds one reference store only (:data:`REFERENCE_ONLY_CHAPTERS`)."""
        return self.chapter in REFERENCE_ONLY_CHAPTERS


def parse_chapter(path: Path) -> list[Requirement]:
    """Every requirement of one markdown chapter, in order of appearance."""
    found = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        match = _ITEM.match(line)
        if match is None:
            if re.match(r"^- \*\*[A-Z]+-\d+\*\*", line):
                raise ValueError(f"{path}:{number}: malformed requirement item")
            continue
        text = match["text"]
        retired = text.startswith("(retired)")
        level = next((name for name, word in _LEVELS if word.search(text)), None)
        if level is None and not retired:
            raise ValueError(f"{path}:{number}: {match['id']} has no RFC 2119 keyword")
        found.append(
            Requirement(
                id=match["id"],
                chapter=path.name,
                level=level or "RETIRED",
                summary=_MARKUP.sub("", text),
                retired=retired,
            )
        )
    return found


def parse_spec(spec_dir: Path) -> list[Requirement]:
    """All requirements of all chapters, sorted by id; duplicate ids are an error."""
    requirements: dict[str, Requirement] = {}
    for path in sorted(spec_dir.glob("*.md")):
        for requirement in parse_chapter(path):
            if requirement.id in requirements:
                raise ValueError(f"{requirement.id} defined twice")
            requirements[requirement.id] = requirement
    return [requirements[key] for key in sorted(requirements)]


def render_index(requirements: list[Requirement]) -> str:
    """The text of ``requirements.json`` for these requirements."""
    document = {
        "specVersion": SPEC_VERSION,
        "requirements": [attrs.asdict(requirement) for requirement in requirements],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def load_index() -> list[Requirement]:
    """The shipped index (package data)."""
    text = (
        resources.files("convledger_conformance").joinpath("requirements.json").read_text("utf-8")
    )
    return [Requirement(**entry) for entry in json.loads(text)["requirements"]]


def active_ids() -> frozenset[str]:
    """Ids of every requirement that is not retired."""
    return frozenset(r.id for r in load_index() if not r.retired)


def conformance_ids() -> frozenset[str]:
    """Ids a conformance report gives a status: active and not reference-only (CAP-004)."""
    return frozenset(r.id for r in load_index() if not r.retired and not r.reference_only)


def main(argv: list[str] | None = None) -> int:
    """Print the index generated from a spec directory, or write it with --write."""
    args = sys.argv[1:] if argv is None else argv
    spec_dir = Path(args[0]) if args else Path("spec")
    text = render_index(parse_spec(spec_dir))
    if "--write" in args:
        target = Path(__file__).with_name("requirements.json")
        target.write_text(text, "utf-8")
        print(f"wrote {target}")
        # the suite's oracle values (spec_values.py) read the package's copy of the table
        table = Path(__file__).with_name("limits.json")
        table.write_bytes((spec_dir / "limits.json").read_bytes())
        print(f"wrote {table}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
