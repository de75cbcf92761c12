"""A wire-protocol proxy that sleeps before forwarding each request of one op (issue 34 tests).

    python delay_proxy.py --op append --delay 0.002 -- node interop/node/server.js

It starts the server command and copies frames both ways (spec ``wire.md``: a
4-byte big-endian length, then one CBOR map), sleeping ``--delay`` seconds
before it forwards a request whose ``op`` is ``--op``: the same server with a
slower ``append``, as seen over the wire. With ``--delay 0`` it only adds the
copy, so a baseline measured through it compares with a slowed run through it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from typing import IO

import cbor2


def _copy(source: IO[bytes], target: IO[bytes]) -> None:
    while chunk := source.read1(65536):  # type: ignore[attr-defined]
        target.write(chunk)
        target.flush()
    target.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", required=True)
    parser.add_argument("--delay", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    replies = threading.Thread(target=_copy, args=(server.stdout, sys.stdout.buffer), daemon=True)
    replies.start()
    source = sys.stdin.buffer
    while True:
        length = source.read(4)
        if len(length) < 4:
            break
        body = source.read(int.from_bytes(length, "big"))
        try:
            message = cbor2.loads(body)
        except Exception:
            message = None
        if args.delay and isinstance(message, dict) and message.get("op") == args.op:
            time.sleep(args.delay)
        server.stdin.write(length + body)
        server.stdin.flush()
    server.stdin.close()
    code = server.wait()
    replies.join(timeout=5)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
