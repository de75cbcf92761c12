"""``convledger-conformance new-store PATH [--lang py|ts]``: the command that writes a skeleton.

It writes a Python skeleton on the capability bases (:mod:`convledger_conformance.skeleton`)
or, with ``--lang ts``, a TypeScript one on ``@convledger/kit``
(:mod:`convledger_conformance.skeleton_ts`); a refusal of either writes nothing and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convledger.capabilities import Capability
from convledger_conformance.skeleton import CLASS_NAME, SkeletonError, capabilities_from, write


def main(argv: Sequence[str]) -> int:
    """``convledger-conformance new-store PATH [--capabilities ...]``: 0 written, 2 refused."""
    parser = argparse.ArgumentParser(
        prog="convledger-conformance new-store",
        description="Write a runnable skeleton store with every hook of the declared "
        "capabilities, documented from the capability bases.",
    )
    parser.add_argument("path", type=Path, metavar="PATH", help="the module to write (new)")
    parser.add_argument(
        "--capabilities",
        default=Capability.LEDGER.value,
        metavar="CAP[,CAP...]",
        help="capabilities to declare (default: ledger; ledger is always included): "
        + ", ".join(c.value for c in Capability if c is not Capability.MIGRATION),
    )
    parser.add_argument(
        "--lang", choices=("py", "ts"), default="py",
        help="py: a Python module on the bases; ts: a TypeScript module on @convledger/kit",
    )
    args = parser.parse_args(argv)
    try:
        capabilities = capabilities_from(args.capabilities)
        if args.lang == "ts":
            from convledger_conformance.skeleton_ts import write_ts

            text = write_ts(args.path, capabilities)
            count = text.count("is not implemented yet');")
            print(f"wrote {args.path}: class MyStorage, {count} hooks to implement "
                  f"({', '.join(c.value for c in capabilities)})")
            return 0
        text = write(args.path, capabilities)
    except (SkeletonError, OSError) as error:
        print(f"convledger-conformance new-store: {error}", file=sys.stderr)
        return 2
    count = text.count("raise NotImplementedError")
    print(f"wrote {args.path}: class {CLASS_NAME}, {count} hooks to implement "
          f"({', '.join(c.value for c in capabilities)})")
    return 0
