"""A :class:`~convledger.store.LedgerStore` proxy over a subprocess (chapter ``wire.md``).

Theory of operation
-------------------
:class:`WireStoreFactory` starts the server command once, greets it
(``hello``, WIR-006) and then makes one store per call with ``newStore``
(WIR-020): a conformance run's fresh store per Hypothesis example costs one
round trip, not a process start. Each :class:`WireStore` holds a handle and
turns every method of the store interface into one request (WIR-013, WIR-015); its
refusals come back as the typed errors of :mod:`convledger.errors`, built from
the normative kind (WIR-008), so every check, the state machines with their
shrinking and the vectors run unchanged.

Requests go one at a time under a lock (the checks call stores from several
threads; the server answers in order, WIR-005). Every reply is awaited with a
timeout: a server that hangs, exits or answers something that is not a reply
raises a :class:`WireError`, which is never a store refusal, so no check can
take a dead server for a conforming one (WIR-009). After one such error the
connection is broken and every later call raises at once.

While a request is pending the server may call back the caller's
``authorize`` callback (``get_spill``, ``search``): the proxy answers each
callback frame with ``ok: true`` only for an exactly-True result, ``ok:
false`` otherwise and an error when the callback raises, and waits on with
its timeout restarted (WIR-030 .. WIR-034). A projection definition travels
with its fold by name (:mod:`convledger.projections.named`,
WIR-018).

A value that has no CBOR image (a string with a lone surrogate, a set, an
arbitrary object) cannot be sent; the proxy refuses it with ``invalid_input``
itself (WIR-011), as every conforming store must.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import IO, Any, Final, TypeVar

from convledger.canonical import JsonValue
from convledger.capabilities import not_supported
from convledger.envelope import Envelope, EventDraft
from convledger.errors import InvalidInputError, LedgerError
from convledger.handles import StoreLocator
from convledger.host.rows import Appends, ChildLink, FactRow, ScheduleRow
from convledger.interface import EveryOperation
from convledger.kinds import KindRegistry, default_registry
from convledger.projections.definition import Checkpoint as ProjectionCheckpoint
from convledger.projections.definition import ProjectionDefinition, ProjectionStatus
from convledger.projections.fold import DEFAULT_MAX_EVENTS
from convledger.projections.named import fold_name
from convledger.runtime.operations import PurgeOutcome, RecoveryCursor, RecoveryPage
from convledger.runtime.records import Run
from convledger.runtime.state import Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.search.operations import Hit
from convledger.spills.objects import Authorize, SpillMetadata
from convledger.store import DEFAULT_READ_LIMIT, Capability, ImportReport, LedgerStore, Page
from convledger.wire import values
from convledger.wire.frames import MAX_FRAME, FrameError, decode_body, encode_frame
from convledger.wire.server import PROTOCOL_VERSION

T = TypeVar("T")

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds to wait for one reply before the server counts as hung (WIR-009)."""
_STDERR_TAIL = 2000


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

    def __init__(self, command: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT) -> None:
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
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
            )
        except OSError as error:
            raise ServerExitedError(f"cannot start {self.argv!r}: {error}") from error
        try:
            hello = self.request("hello", {"protocol": PROTOCOL_VERSION})
        except LedgerError as refusal:
            self._break(WireProtocolError(f"the server refused hello: {refusal!r}"))
            raise self._broken from None  # type: ignore[misc]
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL_VERSION:
            self._break(WireProtocolError(f"the server's hello is {hello!r}"))
            raise self._broken  # type: ignore[misc]
        self.hello: dict[str, Any] = hello

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
                size = int.from_bytes(self._read(4, deadline, "raw"), "big")
                if size > MAX_FRAME:
                    raise WireProtocolError(f"a reply of {size} bytes exceeds {MAX_FRAME}")
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
                size = int.from_bytes(self._read(4, deadline, op), "big")
                if size > MAX_FRAME:
                    raise FrameError(f"a reply of {size} bytes exceeds {MAX_FRAME} (WIR-001)")
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
                self._process.kill()
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
        return f"; its standard error ends:\n{text}" if text else ""

    def _break(self, error: WireError) -> None:
        if self._broken is None:
            self._broken = error
        if self._process.poll() is None:
            self._process.kill()

    def close(self) -> None:
        """End the server: close its input, wait briefly, then kill it."""
        with self._lock:
            if self._process.stdin is not None and not self._process.stdin.closed:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._stderr.close()
            if self._broken is None:
                self._broken = ServerExitedError("the connection was closed")


class WireStoreFactory:
    """A conformance factory: each call returns a fresh, empty store of one server (WIR-020)."""

    def __init__(self, command: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.command = command
        self.timeout = timeout
        self._connection: WireConnection | None = None
        atexit.register(self.close)

    @property
    def connection(self) -> WireConnection:
        """The server connection, started and greeted on first use."""
        if self._connection is None:
            self._connection = WireConnection(self.command, timeout=self.timeout)
        return self._connection

    def __call__(self) -> EveryOperation:
        """A new empty store (``newStore``), with every operation (the server refuses the rest)."""
        connection = self.connection
        return WireStore(connection, connection.request("newStore", {}))

    def close(self) -> None:
        """Stop the server, if it was started."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __repr__(self) -> str:
        return f"WireStoreFactory({self.command!r})"


def _refuse_unencodable(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return call()
    except values.Unencodable as error:
        raise InvalidInputError(f"{error}", requirement="WIR-011") from None


class WireStore:
    """One store of a server, behind the store interface (WIR-013, WIR-015)."""

    def __init__(self, connection: WireConnection, created: object) -> None:
        if not isinstance(created, dict) or not isinstance(created.get("store"), int):
            raise WireProtocolError(f"newStore answered {created!r}")
        self._connection = connection
        self.handle: int = created["store"]
        self._capabilities = _capabilities(created.get("capabilities"))
        self._registry = default_registry()
        self._closed = False

    def _call(
        self,
        op: str,
        build: Callable[[], dict[str, Any]] = dict,
        *,
        callback: Callable[[Any], object] | None = None,
    ) -> Any:
        args = _refuse_unencodable(build)
        args["store"] = self.handle
        return self._connection.request(op, args, callback=callback)

    @property
    def connection(self) -> WireConnection:
        """The connection to the server this store lives in."""
        return self._connection

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The declaration ``newStore`` returned (CAP-001, WIR-021)."""
        return self._capabilities

    @property
    def registry(self) -> KindRegistry:
        """The registry of ``kinds.json`` of the spec version the server announced (WIR-022)."""
        return self._registry

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        """``append`` (WIR-013, WIR-015)."""

        def build() -> dict[str, Any]:
            args = {
                "conversationId": values.value_out(conversation_id),
                "drafts": values.drafts_out(drafts),
            }
            if expected_head is not None:
                args["expectedHead"] = values.value_out(expected_head)
            return args

        return _reply(values.envelopes_in, self._call("append", build))

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Page:
        """``read``: every argument travels, defaults included (WIR-013, WIR-015)."""

        def build() -> dict[str, Any]:
            args = {
                "conversationId": values.value_out(conversation_id),
                "fromSeq": values.value_out(from_seq),
                "limit": values.value_out(limit),
            }
            if to_seq is not None:
                args["toSeq"] = values.value_out(to_seq)
            return args

        return _reply(values.page_in, self._call("read", build))

    def _conversation_call(self, op: str, conversation_id: object, **extra: object) -> Any:
        def build() -> dict[str, Any]:
            args = {"conversationId": values.value_out(conversation_id)}
            args.update({key: values.value_out(item) for key, item in extra.items()})
            return args

        return self._call(op, build)

    def head(self, conversation_id: str) -> int:
        """``head``."""
        value = self._conversation_call("head", conversation_id)
        if isinstance(value, bool) or not isinstance(value, int):
            raise WireProtocolError(f"head answered {value!r}")
        return value

    def export_conversation(self, conversation_id: str) -> bytes:
        """``exportConversation``: the archive travels as a CBOR byte string."""
        value = self._conversation_call("exportConversation", conversation_id)
        if not isinstance(value, bytes):
            raise WireProtocolError(f"exportConversation answered a {type(value).__name__}")
        return value

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """``importConversation``; definitions travel with their folds by name (WIR-018)."""
        value = self._call("importConversation", lambda: {
            "archive": values.value_out(archive), **_projections_out(projections),
        })
        return _reply(values.import_report_in, value)

    def catch_up(
        self,
        conversation_id: str,
        definition: ProjectionDefinition,
        *,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> ProjectionCheckpoint:
        """``catchUp``: the definition travels with its fold by name (WIR-018)."""
        value = self._call("catchUp", lambda: {
            "conversationId": values.value_out(conversation_id),
            "definition": _definition_out(definition),
            "maxEvents": values.value_out(max_events),
        })
        checkpoint = _reply(values.checkpoint_in, value)
        if checkpoint is None:
            raise WireProtocolError("catchUp answered null")
        return checkpoint

    def load_checkpoint(self, conversation_id: str, name: str) -> ProjectionCheckpoint | None:
        """``loadCheckpoint``."""
        value = self._conversation_call("loadCheckpoint", conversation_id, name=name)
        return _reply(values.checkpoint_in, value)

    def projection_status(self, conversation_id: str, name: str) -> ProjectionStatus:
        """``projectionStatus``."""
        value = self._conversation_call("projectionStatus", conversation_id, name=name)
        return _reply(values.status_in, value)

    def reopen(self) -> LedgerStore:
        """``reopen``: this handle closes, the returned one sees the same data."""
        created = self._call("reopen")
        self._closed = True
        store: LedgerStore = WireStore(self._connection, created)
        return store

    def transition(
        self, conversation_id: str, transition: Transition, *, event_id: str, occurred_at: str
    ) -> Outcome:
        """``transition``: the transition travels as ``{type, input}`` (WIR-015)."""
        value = self._call("transition", lambda: {
            "conversationId": values.value_out(conversation_id),
            "transition": values.transition_out(transition),
            "eventId": values.value_out(event_id),
            "occurredAt": values.value_out(occurred_at),
        })
        return _reply(values.outcome_in, value)

    def load_run(self, conversation_id: str, run_id: str) -> Run | None:
        """``loadRun``."""
        return _reply(values.run_in, self._conversation_call("loadRun", conversation_id,
                                                             runId=run_id))

    def list_active_runs(self, conversation_id: str) -> tuple[Run, ...]:
        """``listActiveRuns``."""
        return _reply(values.runs_in, self._conversation_call("listActiveRuns", conversation_id))

    def load_snapshot(self, conversation_id: str) -> Snapshot:
        """``loadSnapshot``."""
        return _reply(values.snapshot_in, self._conversation_call("loadSnapshot", conversation_id))

    def scan_recoverable(
        self, *, after: RecoveryCursor | None = None, limit: int = 100
    ) -> RecoveryPage:
        """``scanRecoverable``."""

        def build() -> dict[str, Any]:
            args = {"limit": values.value_out(limit)}
            if after is not None:
                args["after"] = values.cursor_out(after)
            return args

        return _reply(values.recovery_page_in, self._call("scanRecoverable", build))

    def purge(self, conversation_id: str) -> PurgeOutcome:
        """``purge``."""
        return _reply(values.purge_in, self._conversation_call("purge", conversation_id))

    def put_spill(
        self,
        conversation_id: str,
        data: bytes,
        *,
        media_type: str,
        operation: dict[str, JsonValue],
        reference: str,
        event_id: str,
        occurred_at: str,
    ) -> SpillMetadata:
        """``putSpill``: the data travels as a CBOR byte string (WIR-016)."""
        value = self._call("putSpill", lambda: {
            "conversationId": values.value_out(conversation_id),
            "data": values.value_out(data),
            "mediaType": values.value_out(media_type),
            "operation": values.value_out(operation),
            "reference": values.value_out(reference),
            "eventId": values.value_out(event_id),
            "occurredAt": values.value_out(occurred_at),
        })
        return _reply(values.metadata_in, value)

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        """``getSpill``: the server asks ``authorize`` back about the descriptor (WIR-030)."""
        value = self._call("getSpill", lambda: {
            "conversationId": values.value_out(conversation_id),
            "reference": values.value_out(reference),
            **_authorize_out(authorize),
        }, callback=_callback(authorize))
        return _reply(partial(values.bytes_in, what="getSpill"), value)

    def delete_spill(
        self,
        conversation_id: str,
        reference: str,
        *,
        reason: str = "deleted",
        event_id: str,
        occurred_at: str,
    ) -> Envelope:
        """``deleteSpill``: every argument travels, the default reason included."""
        value = self._call("deleteSpill", lambda: {
            "conversationId": values.value_out(conversation_id),
            "reference": values.value_out(reference),
            "reason": values.value_out(reason),
            "eventId": values.value_out(event_id),
            "occurredAt": values.value_out(occurred_at),
        })
        return _reply(values.envelope_in, value)

    def export_bundle(self, conversation_id: str) -> bytes:
        """``exportBundle``: the bundle travels as a CBOR byte string (WIR-016)."""
        value = self._conversation_call("exportBundle", conversation_id)
        return _reply(partial(values.bytes_in, what="exportBundle"), value)

    def import_bundle(
        self, bundle: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """``importBundle``; definitions travel with their folds by name (WIR-018)."""
        value = self._call("importBundle", lambda: {
            "bundle": values.value_out(bundle), **_projections_out(projections),
        })
        return _reply(values.import_report_in, value)

    def search(
        self,
        requester: str,
        query: str,
        *,
        scope: Sequence[str] | None = None,
        limit: int = 20,
        authorize: Callable[[str], bool] | None = None,
    ) -> tuple[Hit, ...]:
        """``search``: the server asks ``authorize`` back per foreign conversation (WIR-030)."""

        def build() -> dict[str, Any]:
            args = {
                "requester": values.value_out(requester),
                "query": values.value_out(query),
                "limit": values.value_out(limit),
                **_authorize_out(authorize),
            }
            if scope is not None:
                args["scope"] = values.value_out(scope)
            return args

        value = self._call("search", build, callback=_callback(authorize))
        return _reply(values.hits_in, value)

    def write_fact_rows(
        self, row: FactRow, appends: Appends, *, skip_purged: bool = False
    ) -> tuple[str, ...]:
        """Refused: the wire protocol carries no fact rows (WIR-021)."""
        raise not_supported(Capability.FACT_ROWS, "write_fact_rows")

    def child_links(self, parent_conversation_id: str) -> tuple[ChildLink, ...]:
        """Refused: the wire protocol carries no fact rows (WIR-021)."""
        raise not_supported(Capability.FACT_ROWS, "child_links")

    def schedules(self, conversation_id: str) -> tuple[ScheduleRow, ...]:
        """Refused: the wire protocol carries no fact rows (WIR-021)."""
        raise not_supported(Capability.FACT_ROWS, "schedules")

    def open_handle(self) -> LedgerStore:
        """Refused: the wire protocol carries no other handles (WIR-021)."""
        raise not_supported(Capability.MULTI_PROCESS, "open_handle")

    def locator(self) -> StoreLocator:
        """Refused: the wire protocol carries no locators (WIR-021)."""
        raise not_supported(Capability.MULTI_PROCESS, "locator")

    def close(self) -> None:
        """``close``; a no-op once closed or when the server is already gone."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(WireError):
            self._call("close")

    def __getattr__(self, name: str) -> Callable[..., object]:
        """An operation the proxy does not know: sent as its camelCase request (WIR-007).

        A server that does not carry it answers ``not_supported``; positional
        arguments travel in ``args``, keyword arguments under their camelCase names,
        each as null when it has no CBOR image.
        """
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*positional: object, **keywords: object) -> object:
            def build() -> dict[str, Any]:
                args: dict[str, Any] = {"args": [_best_effort(item) for item in positional]}
                for key, item in keywords.items():
                    args[_camel(key)] = _best_effort(item)
                return args

            return self._call(_camel(name), build)

        return call

    def __repr__(self) -> str:
        return f"WireStore(handle={self.handle})"


def _definition_out(definition: object) -> Any:
    """WIR-018: a definition with its fold by name; a callable fold without one cannot travel."""
    if not isinstance(definition, ProjectionDefinition):
        return values.value_out(definition)
    name = fold_name(definition)
    if name is None and callable(definition.fold):
        raise InvalidInputError(
            "a definition whose fold has no name cannot travel (WIR-018)",
            requirement="WIR-018", field="fold",
        )
    return values.definition_out(definition, name)


def _projections_out(projections: object) -> dict[str, Any]:
    """``projections``: absent when empty, else each definition as :func:`_definition_out`."""
    if isinstance(projections, (list, tuple)):
        if not projections:
            return {}
        return {"projections": [_definition_out(item) for item in projections]}
    return {"projections": values.value_out(projections)}


def _authorize_out(authorize: object) -> dict[str, Any]:
    """WIR-030: ``authorize`` is true for a callable, false for another value, absent for None."""
    if authorize is None:
        return {}
    return {"authorize": callable(authorize)}


def _callback(authorize: object) -> Callable[[Any], object] | None:
    """The callable the server may call back, if the caller gave one."""
    return authorize if callable(authorize) else None


def _best_effort(value: object) -> Any:
    """The CBOR image of an argument of an operation the protocol does not carry, or null.

    Such a request is answered ``not_supported`` whatever its arguments (WIR-007),
    so a value without an image (a callback, a definition object) travels as null.
    """
    try:
        return values.value_out(value)
    except values.Unencodable:
        return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _reply(decode: Callable[[object], T], value: object) -> T:
    try:
        return decode(value)
    except values.ReplyError as error:
        raise WireProtocolError(f"{error}") from None


def _capabilities(value: object) -> frozenset[Capability]:
    if not isinstance(value, list):
        raise WireProtocolError(f"a declaration is an array of names, got {value!r}")
    try:
        return frozenset(Capability(name) for name in value)
    except ValueError as error:
        raise WireProtocolError(f"an unknown capability in {value!r}: {error}") from None
