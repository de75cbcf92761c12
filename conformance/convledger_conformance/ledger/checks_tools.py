"""Checks of the reference tools ``convledger canon`` (CAN-015) and ``convledger verify`` (ARC-015).

The tools are the oracles other implementations compare against, so they are
run the way a user runs them: as real processes (``python -m convledger``) on
real files in a temporary directory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

from convledger import canonical
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger import strategies_archive as arc
from convledger_conformance.ledger.checks_canonical import DECODER_REFUSALS, VECTORS
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import draft, fail, wires


@attrs.frozen
class Ran:
    """What one tool process did."""

    status: int
    stdout: bytes
    stderr: bytes


def convledger(*calls: tuple[tuple[str, ...], bytes]) -> list[Ran]:
    """Run ``python -m convledger ARGS`` for each ``(ARGS, stdin)``, all at once."""
    processes = [
        (subprocess.Popen([sys.executable, "-m", "convledger", *args], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE), stdin)
        for args, stdin in calls
    ]
    results = []
    for process, stdin in processes:
        out, err = process.communicate(stdin)
        results.append(Ran(process.returncode, out, err))
    return results


NON_CANONICAL = (
    (b'{ "b" : 1.0 , "a" : [ 1E2, "\\u00e9", "\\ud83d\\ude00", -0.0, 1e-7 ] }\n',
     '{"a":[100,"é","😀",0,1e-7],"b":1}'.encode()),
    (b'[\n  "\\/", 0.000001, 1E21, {"\\u00fc": true, "u": null}\n]',
     '["/",0.000001,1e+21,{"u":null,"ü":true}]'.encode()),
)
"""Valid but non-canonical documents and their canonical bytes, written out by hand (CAN-014)."""


CANON_REFUSALS = frozenset({
    "truncated", "NaN", "a byte order mark", "an invalid byte", "a duplicate member",
    "a lone high surrogate escape", "the integer 2**53+1", "a number overflowing a double",
})
"""Refused documents given to ``canon``: one per reason of the CAN chapter's oracle."""


@check("CAN-014", "CAN-015")
def check_canon_tool(ctx: CheckContext) -> None:
    """CAN-014, CAN-015: canon prints exact canonical bytes, or exits 2 naming the kind."""
    with tempfile.TemporaryDirectory() as folder:
        vectors = [value for _, value, _ in VECTORS]
        texts = "[" + ",".join(text for _, _, text in VECTORS) + "]"
        Path(folder, "vectors.json").write_bytes(canonical.encode(vectors))
        calls: list[tuple[tuple[str, ...], bytes]] = [(("canon", f"{folder}/vectors.json"), b"")]
        for number, (source, _) in enumerate(NON_CANONICAL):
            Path(folder, f"loose-{number}.json").write_bytes(source)
            calls += [(("canon", f"{folder}/loose-{number}.json"), b""), (("canon", "-"), source)]
        refusals = [entry for entry in DECODER_REFUSALS if entry[1] in CANON_REFUSALS]
        if ctx.profile == "smoke":  # each document is a process; smoke keeps three reasons
            refusals = refusals[::3]
        for number, (_, _, data) in enumerate(refusals):
            Path(folder, f"refused-{number}.json").write_bytes(data)
            calls.append((("canon", f"{folder}/refused-{number}.json"), b""))
        vectors_ran, *rest = convledger(*calls)
        if (vectors_ran.status, vectors_ran.stdout) != (0, texts.encode()):
            fail("CAN-015", f"canon of canonical vectors gave {vectors_ran!r}")
        loose, refused = rest[: 2 * len(NON_CANONICAL)], rest[2 * len(NON_CANONICAL):]
        for number, ran in enumerate(loose):
            source, want = NON_CANONICAL[number // 2]
            if (ran.status, ran.stdout) != (0, want):
                fail("CAN-014", f"canon of non-canonical {source!r} gave {ran!r}")
        for (requirement, what, _), ran in zip(refusals, refused, strict=True):
            if ran.status != 2 or ran.stdout or b"invalid_input" not in ran.stderr:
                fail("CAN-015", f"canon of a document with {what} ({requirement}) gave {ran!r}")


def _hostile_archive() -> tuple[bytes, list[tuple[str, tuple[str, ...]]]]:
    """An archive with six independent problems, and the (kind, ids) each must be reported as."""
    events = wires("a", [draft(f"e{n}") for n in range(5)])
    events[0]["conversationId"] = "elsewhere"
    events[1]["eventId"] = "e0"
    events[2]["kind"] = gen.UNKNOWN_KIND
    events[3]["extra"] = True
    events[4]["seq"] = 99
    document = {**arc.document_of("a", events), "companions": {"unknown": {}}}
    loose = json.dumps(document, indent=1, ensure_ascii=False).encode()
    expected = [
        ("invalid_input", ("ARC-003",)),
        ("invalid_input", ("ARC-006",)),
        ("invalid_input", ("ARC-008",)),
        ("replay_refused", ("RPL-003", "ARC-012")),
        ("invalid_input", ("ENV-002", "ARC-012")),
        ("invalid_input", ("ARC-007",)),
        ("invalid_input", ("ARC-011",)),
    ]
    return loose, expected


@check("ARC-015")
def check_verify_tool(ctx: CheckContext) -> None:
    """ARC-015: verify reports every store-independent problem and exits 0 only with none."""
    with tempfile.TemporaryDirectory() as folder:
        good = Path(folder, "good.json")
        good.write_bytes(canonical.encode(arc.document_of("a", wires("a", [draft("e")]))))
        data, expected = _hostile_archive()
        bad = Path(folder, "bad.json")
        bad.write_bytes(data)
        accepted, ran = convledger((("verify", str(good)), b""), (("verify", str(bad)), b""))
        if accepted.status != 0:
            fail("ARC-015", f"verify of a valid archive gave {accepted!r}")
        if ran.status != 1:
            fail("ARC-015", f"verify of an archive with problems exited {ran.status}")
        lines = ran.stdout.decode("utf-8", "replace").splitlines()
        for kind, ids in expected:
            if not any(kind in line and any(i in line for i in ids) for line in lines):
                fail("ARC-015", f"verify did not report {kind} {'/'.join(ids)}: {lines!r}")
