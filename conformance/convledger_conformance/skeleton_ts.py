"""``convledger-conformance new-store PATH --lang ts``: a store skeleton on the TypeScript kit.

Writes one TypeScript module holding a storage class with the hooks of
``@convledger/kit`` (``interop/typescript/src/storage.ts``) for the declared
capabilities, each documented with its contract and the spec ids that bind it
and each throwing ``HOOK (capability CAP) is not implemented yet`` (the message
the Python skeleton's hooks raise, so the report's "Start here" lists the hooks
still to write, diagnosis.py), and the call of ``serve``. A run of the suite
against the skeleton (after ``tsc``) answers every operation with kind
``internal`` naming the hook still to write.

The kit serves capabilities ``ledger``, ``persistence``, ``purge``,
``projections``, ``spills`` and ``search``; any other is refused, as is a PATH that exists
already or is not a ``.ts`` file. The hooks of ``spills`` are members of the
``StoredState`` that ``write`` and ``view`` hand the kit (the kit's
``SpillState``): the skeleton writes them in a class of their own,
``MySpills``, and objects travel to the storage in the ``Change`` of ``write``.
``tests/test_new_store.py`` checks that the hooks written here are the members
of the kit's interfaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from convledger.capabilities import Capability
from convledger_conformance.skeleton import SkeletonError

SERVED: Final = (Capability.LEDGER, Capability.PERSISTENCE, Capability.PURGE,
                 Capability.PROJECTIONS, Capability.SPILLS, Capability.SEARCH)
"""The capabilities the kit serves, in table order."""

HOOKS: Final[dict[Capability, tuple[tuple[str, str, str], ...]]] = {
    Capability.LEDGER: (
        ("write", "conversationId: string, step: (state: StoredState) => Change): void",
         "In ONE atomic step (LED-002, LED-004, LED-013, TRN-095, PRJ-011, PRJ-044): give\n"
         "`step` the conversation's state (head, purged, taken, read, checkpoint, checkpoints),\n"
         "then store the Change it returns (envelopes after the head, exactly as given;\n"
         "checkpoints replacing those of their names). When `step` throws, store nothing and\n"
         "let the error through; the kit's step holds every refusal (ERR-010, ERR-011)."),
        ("view", "conversationId: string, look: (state: StoredState) => T): T",
         "In one atomic snapshot (ARC-014, PRJ-014): give `look` the conversation's state.\n"
         "`arrayState(conversation, purged, taken)` builds a StoredState over arrays."),
    ),
    Capability.PERSISTENCE: (
        ("reopen", "): Storage",
         "Close this storage and return one on the same data, as a fresh process would see\n"
         "it (WIR-020, LED-015); acknowledge a write only once it is durable (WIR-042)."),
    ),
    Capability.PURGE: (
        ("purge", "conversationId: string): boolean",
         "In ONE atomic step: delete the conversation's events, checkpoints and spill objects\n"
         "(SPL-032), keep a tombstone forever (TRN-093); true when newly purged, false when\n"
         "purged before (TRN-090). A conversation that never existed is purged too."),
    ),
    Capability.PROJECTIONS: (),
    Capability.SPILLS: (),
    Capability.SEARCH: (
        ("viewAll", "look: (conversationIds: readonly string[], state: (conversationId: string)"
         " => StoredState) => T): T",
         "In one atomic snapshot: give `look` the ids of every conversation that has events,\n"
         "never a purged one (SRC-004), and the StoredState of any conversation. The kit checks\n"
         "the query (SRC-020 .. SRC-023), matches the folded words (SRC-025), orders the hits\n"
         "and asks the client's callback (SRC-003, SRC-010 .. SRC-013)."),
    ),
}
"""The hooks of each capability on the storage: name, the signature after the name, the contract."""

STATE_HOOKS: Final[dict[Capability, tuple[tuple[str, str, str], ...]]] = {
    Capability.SPILLS: (
        ("spill", "reference: string): SpillMetadata | null",
         "Inside write's atomic step or view's snapshot: the live object of `reference` in\n"
         "THIS conversation (its reference, mediaType, bytes, sha256, createdSeq and creating\n"
         "operation, SPL-010), or null, also when another conversation has one (SPL-021). The\n"
         "kit refuses a put of a live reference (SPL-007), an append naming one (SPL-008) and a\n"
         "delete of one that is not live (SPL-031) from it."),
        ("spills", "): readonly SpillMetadata[]",
         "In the same snapshot as the events: every live object of the conversation, in any\n"
         "order; the kit lists them in archives and bundles (SPL-040, SPL-044, SPL-054)."),
        ("spillData", "reference: string): Uint8Array | null",
         "In the same snapshot: the bytes kept for a live object exactly as stored, or null;\n"
         "the kit asks the client's callback first and then checks them against the size and\n"
         "sha256 (SPL-020, SPL-022, SPL-023)."),
    ),
}
"""The hooks of a capability on the StoredState (the kit's ``SpillState``), in a class apart."""

NOTE: Final = {
    Capability.PROJECTIONS: "projections: the kit folds (PRJ-011 .. PRJ-033); the storage keeps "
    "the checkpoints `write` hands it and gives them back in `checkpoint`/`checkpoints`.",
    Capability.SPILLS: "spills: the kit checks, authorizes and bundles (SPL); `write` keeps the "
    "Change's `spills` (objects with their bytes) and deletes its `deletedSpills` in the same "
    "atomic step as its events (SPL-001, SPL-030, SPL-055), and each StoredState it hands the kit "
    "carries the members of MySpills below (`arrayState` does).",
}


def capabilities_ts(capabilities: Sequence[Capability]) -> tuple[Capability, ...]:
    """The capabilities asked for, refused unless the kit serves them."""
    unserved = [c.value for c in capabilities if c not in SERVED]
    if unserved:
        raise SkeletonError(
            f"the TypeScript kit does not serve {', '.join(unserved)} yet "
            f"(it serves {', '.join(c.value for c in SERVED)})"
        )
    return tuple(c for c in SERVED if c in capabilities)


def render_ts(capabilities: Sequence[Capability]) -> str:
    """The text of the skeleton module."""
    lines = [
        "#!/usr/bin/env node",
        "// A convledger store on @convledger/kit, written by `convledger-conformance new-store",
        "// --lang ts`. Implement each hook (each throws until then), build with tsc, and run:",
        '//   convledger-conformance --command "node PATH.js" --profile smoke',
        "// Build as an ES module: package.json \"type\": \"module\" (the top-level await below),",
        "// tsconfig \"module\": \"NodeNext\", \"target\": \"ES2022\", \"strict\": true;",
        "// then npx tsc.",
        "// Hooks are synchronous: do all I/O before returning (no Promise, no await).",
        "// Write nothing to stdout: it carries the protocol's frames (WIR-023);",
        "// log with console.error.",
        "// Hooks and contracts: the kit's README and dist/src/storage.d.ts in the package.",
        "import { type Change, type Storage, type StoredState, serve } from '@convledger/kit';"
        if Capability.SPILLS not in capabilities else
        "import { type Change, type SpillMetadata, type SpillState, type Storage, "
        "type StoredState, serve } from '@convledger/kit';",
        "",
        "class MyStorage implements Storage {",
    ]
    for capability in capabilities:
        if capability in NOTE:
            lines.append(f"  // {NOTE[capability]}")
        for name, signature, contract in HOOKS[capability]:
            generic = "<T>" if name in ("view", "viewAll") else ""
            lines += [f"  /** {capability.value}: " + contract.replace("\n", "\n   * ") + " */",
                      f"  {name}{generic}({signature} {{",
                      f"    throw new Error('{name} (capability {capability.value}) "
                      "is not implemented yet');",
                      "  }", ""]
    lines[-1] = "}"
    for capability in capabilities:
        for name, signature, contract in STATE_HOOKS.get(capability, ()):
            if lines[-1] == "}":
                lines += ["", f"/** {capability.value}: the members of each StoredState that "
                          "MyStorage's write and view hand the kit. */",
                          "export class MySpills implements SpillState {"]
            lines += [f"  /** {capability.value}: " + contract.replace("\n", "\n   * ") + " */",
                      f"  {name}({signature} {{",
                      f"    throw new Error('{name} (capability {capability.value}) "
                      "is not implemented yet');",
                      "  }", ""]
        if capability in STATE_HOOKS:
            lines[-1] = "}"
    declared = ", ".join(f"'{c.value}'" for c in capabilities)
    lines += [
        "",
        f"await serve({{ name: 'my-store', capabilities: [{declared}], "
        "newStore: () => new MyStorage() });",
        "",
    ]
    return "\n".join(lines)


def write_ts(path: Path, capabilities: Sequence[Capability]) -> str:
    """Write the skeleton to ``path`` (a new ``.ts`` file); return the text written."""
    if path.suffix != ".ts":
        raise SkeletonError(f"{path} must be a .ts file")
    if path.exists():
        raise SkeletonError(f"{path} exists already; it is left as it is")
    text = render_ts(capabilities_ts(capabilities))
    with path.open("x", encoding="utf-8") as stream:
        stream.write(text)
    return text
