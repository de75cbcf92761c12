"""The two servers of a differential run: a subprocess, or a reference server in a thread.

Both are driven the same way, through a pair of pipes: :meth:`Peer.send`
writes bytes, :meth:`Peer.read` returns the next frame the server wrote,
decoded strictly (``decode_body``: a reply that breaks WIR-003 is reported as
unreadable). A server that does not answer within the timeout, or exits, is a
:class:`PeerGone`; the run then records "no reply" for that step.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

from convledger.store_interface import LedgerStore
from convledger.wire.frames import MAX_FRAME, FrameError, decode_body
from convledger.wire.server import WireServer

_STDERR_TAIL = 1500


class PeerGone(Exception):
    """The server hung, exited or lost the framing: no further frame will come."""


class Peer:
    """One server speaking the wire protocol on a pair of pipes."""

    def __init__(self, name: str, timeout: float) -> None:
        self.name = name
        self.timeout = timeout
        self._buffer = bytearray()
        self._input: IO[bytes]
        self._output_fd: int

    def send(self, data: bytes) -> None:
        """Write ``data`` to the server's input."""
        try:
            self._input.write(data)
            self._input.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError) as error:
            raise PeerGone(f"{self.name} closed its input: {error}{self.tail()}") from None

    def read(self) -> Any:
        """The next frame the server wrote, decoded; ``{"$unreadable": true}`` if it is no map."""
        deadline = time.monotonic() + self.timeout
        size = struct.unpack(">I", self._take(4, deadline))[0]
        if size > MAX_FRAME:
            raise PeerGone(f"{self.name} wrote a frame of {size} bytes")
        body = self._take(size, deadline)
        try:
            return decode_body(body)
        except FrameError:  # compared as such: two servers' reasons are never text to compare
            return {"$unreadable": True}

    def _take(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise PeerGone(f"{self.name}: no reply within {self.timeout} s{self.tail()}")
            ready, _, _ = select.select([self._output_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._output_fd, max(65536, size - len(self._buffer)))
            if not chunk:
                raise PeerGone(f"{self.name}: the server ended its output{self.tail()}")
            self._buffer.extend(chunk)
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def tail(self) -> str:
        """The end of the server's standard error, if any (for messages)."""
        return ""

    def kill(self) -> None:
        """Stop the server at once."""

    def close(self) -> None:
        """End the server: close its input and wait for it."""


class ProcessPeer(Peer):
    """A server command in a subprocess (the store under test, or ``serve-wire``)."""

    def __init__(self, command: str | Sequence[str], timeout: float,
                 env: dict[str, str] | None = None) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        super().__init__(" ".join(argv), timeout)
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        except OSError as error:
            self._stderr.close()
            raise PeerGone(f"cannot start {argv!r}: {error}") from error
        assert self._process.stdin is not None and self._process.stdout is not None
        self._input = self._process.stdin
        self._output_fd = self._process.stdout.fileno()

    def tail(self) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            end = self._stderr.tell()
            self._stderr.seek(max(0, end - _STDERR_TAIL))
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; its standard error ends:\n{text}" if text else ""

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._input.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()


class ThreadPeer(Peer):
    """The reference server (:class:`WireServer`) serving ``maker``'s stores in a thread."""

    def __init__(self, name: str, maker: Callable[[], LedgerStore], timeout: float) -> None:
        super().__init__(name, timeout)
        server_in, client_out = os.pipe()
        client_in, server_out = os.pipe()
        self._input = os.fdopen(client_out, "wb")
        self._output = os.fdopen(client_in, "rb", buffering=0)
        self._output_fd = client_in
        requests = os.fdopen(server_in, "rb")
        replies = os.fdopen(server_out, "wb")

        def serve() -> None:
            try:
                WireServer(maker, name=name).serve(requests, replies)
            finally:
                with contextlib.suppress(OSError):
                    replies.close()
                requests.close()

        self._thread = threading.Thread(target=serve, name=f"diff-{name}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._input.close()
        self._thread.join(timeout=30)
        self._output.close()


PeerMaker = Callable[[], Peer]
