"""The suite's connection to a wire server subprocess: frames, replies, callbacks (WIR).

A :class:`WireConnection` starts the server command and greets it (``hello``,
WIR-006). Requests go one at a time under a lock (the checks call stores from
several threads; the server answers in order, WIR-005). Every reply is
awaited with a timeout: a server that hangs, exits or answers something that
is not a reply raises a :class:`WireError`, which is never a store refusal,
so no check can take a dead server for a conforming one (WIR-009). After one
such error the connection is broken and every later call raises at once.

While a request is pending the server may call back the caller's
``authorize`` callback (``get_spill``, ``search``): the connection answers
each callback frame with ``ok: true`` only for an exactly-True result, ``ok:
false`` otherwise and an error when the callback raises, and waits on with
its timeout restarted (WIR-030 .. WIR-034).
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, Final

from convledger.errors import InvalidInputError, LedgerError
from convledger.wire import values
from convledger.wire.frames import MAX_FRAME, FrameError, decode_body, encode_frame
from convledger.wire.server import PROTOCOL_VERSION

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds to wait for one reply before the server counts as hung (WIR-009)."""
_STDERR_TAIL = 2000


STOP_GRACE = 3.0
"""Seconds a stopped server has between SIGTERM and SIGKILL to close its stores."""

class WireError(Exception):
    """The server cannot be used: it hung, exited or broke the protocol (WIR-009).

    Deliberately not a :class:`~convledger.errors.LedgerError`: it is never a
    refusal of the store under test.
    """


class WireTimeoutError(WireError):
    """No reply came within the timeout; the server was killed."""


class ServerExitedError(WireError):
    """The server process ended (or could not start)."""


class WireProtocolError(WireError):
    """The server answered something that is not a reply of this protocol."""


class WireConnection:
    """One server subprocess and the request/reply exchange with it."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._next_id = 1
        self._broken: WireError | None = None
        self._buffer = bytearray()
        self._calling_back: int | None = None
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self._process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env=env,
            )
        except OSError as error:
            self._stderr.close()
            raise ServerExitedError(f"cannot start {self.argv!r}: {error}") from error
        try:
            self.hello: dict[str, Any] = self._greet()
        except BaseException:
            # No caller can close a connection whose constructor raised: reap the
            # server and close its pipes here, or they outlive the failed start.
            self.close()
            raise

    def _greet(self) -> dict[str, Any]:
        try:
            hello = self.request("hello", {"protocol": PROTOCOL_VERSION})
        except LedgerError as refusal:
            self._break(WireProtocolError(f"the server refused hello: {refusal!r}"))
            raise self._broken from None  # type: ignore[misc]
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL_VERSION:
            self._break(WireProtocolError(f"the server's hello is {hello!r}"))
            raise self._broken  # type: ignore[misc]
        return hello

    @property
    def pid(self) -> int:
        """The server's process id (the crash runs of chapter DUR kill it)."""
        return self._process.pid

    def exit_status(self, timeout: float = 10.0) -> int | None:
        """The server's exit status once it ended within ``timeout`` seconds, else None."""
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    @property
    def spec_version(self) -> str:
        """The spec version the server implements (from hello)."""
        return str(self.hello.get("spec"))

    def request(
        self, op: str, args: dict[str, Any], *, callback: Callable[[Any], object] | None = None
    ) -> Any:
        """Send one request and return its ``ok`` value; a refusal raises its typed error.

        While the request is pending the server may call ``callback`` back
        (WIR-030 .. WIR-034); without one, a callback frame is a protocol failure.
        """
        if self._calling_back == threading.get_ident():
            raise WireProtocolError(f"{op}: a callback called the store (WIR-034)")
        with self._lock:  # WIR-024: one request at a time, its reply awaited
            if self._broken is not None:
                raise ServerExitedError(f"the server is unusable: {self._broken}")
            ident = self._next_id
            self._next_id += 1
            try:
                frame = encode_frame({"id": ident, "op": op, "args": args})
            except FrameError as error:
                raise InvalidInputError(f"{error}", requirement="WIR-001") from None
            reply = self._exchange(frame, op, callback)
        if not isinstance(reply, dict) or reply.get("id") != ident or (
            ("ok" in reply) == ("error" in reply)
        ):
            self._break(WireProtocolError(f"{op}: {reply!r} is not the reply to request {ident}"))
            raise self._broken  # type: ignore[misc]
        if "error" in reply:
            try:
                refusal = values.error_in(reply["error"])
            except values.ReplyError as error:
                raise WireProtocolError(f"{op}: {error}") from None
            raise refusal
        return reply["ok"]

    @property
    def broken(self) -> WireError | None:
        """Why the connection is unusable (a timeout, an exit, a frame not a reply), or None."""
        return self._broken

    def exchange_raw(self, data: bytes, replies: int) -> list[Any]:
        """Send ``data`` as it is and return the next ``replies`` reply frames, decoded.

        For the protocol checks (:mod:`convledger_conformance.wire.checks`),
        which send frames the proxy itself never writes.
        """
        with self._lock:
            if self._broken is not None:
                raise ServerExitedError(f"the server is unusable: {self._broken}")
            found = [self._exchange(data, "raw", raw=True)]
            deadline = time.monotonic() + self.timeout
            for _ in range(replies - 1):
                head = self._read(4, deadline, "raw")
                size = int.from_bytes(head, "big")
                if size > MAX_FRAME:
                    raise WireProtocolError(_oversized(size, head))
                found.append(decode_body(self._read(size, deadline, "raw")))
            return found

    def _exchange(
        self,
        frame: bytes,
        op: str,
        callback: Callable[[Any], object] | None = None,
        *,
        raw: bool = False,
    ) -> Any:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(frame)
            stdin.flush()
            while True:
                # WIR-009, WIR-033: the timeout runs from the last frame the client sent.
                deadline = time.monotonic() + self.timeout
                head = self._read(4, deadline, op)
                size = int.from_bytes(head, "big")
                if size > MAX_FRAME:
                    raise FrameError(_oversized(size, head))
                message = decode_body(self._read(size, deadline, op))
                if raw or "callback" not in message:
                    return message
                stdin.write(encode_frame(self._call_back(message, op, callback)))
                stdin.flush()
        except (BrokenPipeError, ConnectionResetError) as error:
            self._break(ServerExitedError(f"{op}: the server closed its input: {error}"))
        except FrameError as error:
            self._break(WireProtocolError(f"{op}: {error}"))
        except WireError as error:
            self._break(error)
        raise self._broken  # type: ignore[misc]

    def _call_back(
        self, message: dict[str, Any], op: str, callback: Callable[[Any], object] | None
    ) -> dict[str, Any]:
        """The ``callbackReply`` to one reverse call (WIR-030 .. WIR-032).

        ``ok`` is true only when the callback returned exactly True; a callback
        that raises is answered with an error. A reverse call of another shape,
        or for a request that has no callback, is a protocol failure (WIR-031).
        """
        ident = message.get("callback")
        if (
            not isinstance(ident, int) or isinstance(ident, bool) or ident < 0
            or message.get("kind") != "authorize"
            or set(message) != {"callback", "kind", "args"}
            or not isinstance(message.get("args"), dict) or set(message["args"]) != {"value"}
        ):
            raise WireProtocolError(f"{op}: a malformed callback frame {message!r}")
        if callback is None:
            raise WireProtocolError(f"{op}: the server called back a request without a callback")
        self._calling_back = threading.get_ident()
        try:
            granted = callback(message["args"]["value"]) is True
        except Exception as error:  # the caller's callback failed: a denial (WIR-032)
            return {"callbackReply": ident,
                    "error": {"kind": values.INTERNAL, "message": repr(error)[:1000]}}
        finally:
            self._calling_back = None
        return {"callbackReply": ident, "ok": granted}

    def _read(self, size: int, deadline: float, op: str) -> bytes:
        stdout = self._process.stdout
        assert stdout is not None
        descriptor = stdout.fileno()
        while len(self._buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop()
                raise WireTimeoutError(
                    f"{op}: no reply within {self.timeout} s; the server was killed{self._tail()}"
                )
            ready, _, _ = select.select([descriptor], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(descriptor, max(65536, size - len(self._buffer)))
            if not chunk:
                code = self._process.wait()
                raise ServerExitedError(
                    f"{op}: the server exited with status {code}{self._tail()}"
                )
            self._buffer.extend(chunk)
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def _tail(self) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            end = self._stderr.tell()
            self._stderr.seek(max(0, end - _STDERR_TAIL))
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        if not text:
            return "; its standard error is empty"
        # The last line first, so a one-line summary ("Start here") carries the likely cause.
        last = text.splitlines()[-1].strip()
        return f" ({last[:300]}); its standard error ends:\n{text}"

    def _break(self, error: WireError) -> None:
        if self._broken is None:
            self._broken = error
        if self._process.poll() is None:
            self._stop()

    def _stop(self) -> None:
        """Stop the server: SIGTERM, so it can close its stores (a PostgreSQL server drops its
        schemas), then SIGKILL after :data:`STOP_GRACE` seconds (WIR-009)."""
        with contextlib.suppress(OSError):
            self._process.terminate()
        try:
            self._process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def close(self) -> None:
        """End the server: close its input, wait briefly, then stop it (:meth:`_stop`)."""
        with self._lock:
            if self._process.stdin is not None and not self._process.stdin.closed:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._stop()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._stderr.close()
            if self._broken is None:
                self._broken = ServerExitedError("the connection was closed")


def _oversized(size: int, head: bytes) -> str:
    """Why a reply's length prefix is refused (WIR-001), with the likeliest cause.

    Four printable ASCII bytes where a length should be are almost always a line the
    server printed on its standard output, which carries only frames (WIR-023).
    """
    message = f"a reply of {size} bytes exceeds {MAX_FRAME} (WIR-001)"
    if all(0x20 <= byte < 0x7F or byte in (0x09, 0x0A, 0x0D) for byte in head):
        message += (f"; its 4 length bytes are the text {head.decode('ascii')!r}: the server "
                    "wrote something other than frames to its standard output, which carries "
                    "only frames (WIR-023; log to standard error)")
    return message
