"""Running steps on two servers, comparing what they answer, shrinking a disagreement.

Each step's *observation* is every frame the server wrote for it (callback
frames, then the reply), normalized: an error keeps its ``kind`` and
``details`` (without the non-normative ``field``; an absent ``details`` is an
empty map), never its message; a ``hello`` reply keeps ``protocol`` and
``spec``; a ``newStore`` reply's handle becomes the session's handle index;
and the *state digest* after it: the SHA-256 of the export of the step's
conversation (:func:`convledger_conformance.vectors.traces.digest`, asked
over the same connection), null when there is none. Two observations are
compared member by member and the first differing path is reported.

A disagreement is shrunk by delta debugging over the steps before it: a
smaller case counts only when its first disagreement is at the same step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from convledger.wire.frames import encode_frame
from convledger_conformance.diff.generate import Step
from convledger_conformance.diff.peers import Peer, PeerGone
from convledger_conformance.diff.values import frame_bytes, to_tagged

_SERVICE_ID = 2**32 - 1
"""The request id of the suite's own requests between steps (digests, closes)."""
_PROBE_ID = 2**32 - 2
_MAX_CALLBACKS = 64
_ANSWERS: dict[str, dict[str, Any]] = {
    "grant": {"ok": True},
    "deny": {"ok": False},
    "raise": {"error": {"kind": "internal", "message": "diff: the callback raised"}},
}
"""The callback reply each policy sends (WIR-032)."""


@attrs.define
class Session:
    """One server and the handles the current case's ``newStore`` requests returned."""

    peer: Peer
    handles: list[int] = attrs.Factory(list)
    gone: PeerGone | None = None
    """Why the server can no longer answer (kept for messages; observations hold no text)."""
    capabilities: frozenset[str] | None = None
    """What the server's successful ``hello`` declared."""


def observe(session: Session, step: Step) -> dict[str, Any]:
    """Send one step and return what the server answered, normalized, with the state digest."""
    if session.gone is not None:
        return {"gone": True}
    try:
        frames = _exchange(session, step)
        digest = _digest(session, step.conversation)
    except PeerGone as error:
        session.gone = error
        return {"gone": True}
    return {"frames": frames, "digest": digest}


def _exchange(session: Session, step: Step) -> list[Any]:
    session.peer.send(frame_bytes(step.send, session.handles))
    op = step.send.get("op") if isinstance(step.send, dict) else None
    frames: list[Any] = []
    while True:
        message = session.peer.read()
        if _is_callback(message) and len(frames) < _MAX_CALLBACKS:
            frames.append(to_tagged(message))
            answer = {"callbackReply": message["callback"], **_ANSWERS[step.callbacks]}
            session.peer.send(encode_frame(answer))
            continue
        frames.append(_reply(message, op, session))
        return frames


def _is_callback(message: Any) -> bool:
    return isinstance(message, dict) and "callback" in message and "id" not in message


def _reply(message: Any, op: object, session: Session) -> Any:
    if not isinstance(message, dict) or "$unreadable" in message:
        return to_tagged(message)
    normal: dict[str, Any] = {key: to_tagged(value) for key, value in message.items()
                              if key not in ("ok", "error")}
    if "error" in message:
        normal["error"] = _error(message["error"])
    if "ok" in message:
        normal["ok"] = _ok(message["ok"], op, session)
    return normal


def _error(error: Any) -> Any:
    if not isinstance(error, dict):
        return to_tagged(error)
    details = error.get("details", {})
    if isinstance(details, dict):
        details = {key: value for key, value in details.items()
                   if key != "field" and not (key == "capability" and value == "")}
    return {"kind": to_tagged(error.get("kind")), "details": to_tagged(details)}


def _ok(value: Any, op: object, session: Session) -> Any:
    handles = session.handles
    if op == "hello" and isinstance(value, dict):
        declared = value.get("capabilities")
        if isinstance(declared, list):
            session.capabilities = frozenset(str(item) for item in declared)
        return {key: to_tagged(value[key]) for key in ("protocol", "spec") if key in value}
    if op in ("newStore", "reopen") and isinstance(value, dict) and isinstance(
            value.get("store"), int):
        handles.append(value["store"])
        return {"store": {"$handle": len(handles) - 1}}
    return to_tagged(value)


def _digest(session: Session, conversation: str | None) -> str | None:
    """SHA-256 of the export of ``conversation`` on the case's store; None when it has none."""
    if conversation is None or not session.handles:
        return None
    request = {"id": _SERVICE_ID, "op": "exportConversation",
               "args": {"store": session.handles[0], "conversationId": conversation}}
    session.peer.send(encode_frame(request))
    reply = session.peer.read()
    if isinstance(reply, dict) and isinstance(reply.get("ok"), bytes):
        return hashlib.sha256(reply["ok"]).hexdigest()
    return None


def in_step(session: Session) -> bool:
    """Whether the server's next frame answers the next request (after a disagreement)."""
    if session.gone is not None:
        return False
    try:
        session.peer.send(encode_frame({"id": _PROBE_ID, "op": "frobnicate"}))
        reply = session.peer.read()
    except PeerGone as error:
        session.gone = error
        return False
    return isinstance(reply, dict) and reply.get("id") == _PROBE_ID


def close_handles(session: Session) -> None:
    """Retire the case's stores (a PostgreSQL server drops their schemas)."""
    for handle in session.handles:
        if session.gone is not None:
            return
        try:
            session.peer.send(encode_frame(
                {"id": _SERVICE_ID, "op": "close", "args": {"store": handle}}))
            session.peer.read()
        except PeerGone as error:
            session.gone = error
    session.handles = []


# -- comparing -------------------------------------------------------------------------------


def first_difference(left: Any, right: Any, path: str = "") -> str | None:
    """The path of the first member where two observations differ, or None when equal."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right), key=_order):
            if key not in left or key not in right:
                return f"{path}.{key}" if path else key
            found = first_difference(left[key], right[key], f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list):
        for index, (one, two) in enumerate(zip(left, right, strict=False)):
            found = first_difference(one, two, f"{path}[{index}]")
            if found is not None:
                return found
        return None if len(left) == len(right) else f"{path}[{min(len(left), len(right))}]"
    if type(left) is not type(right) or left != right:
        return path or "."
    return None


_PRECEDENCE = {"gone": 0, "frames": 1, "id": 2, "callback": 3, "error": 4, "kind": 5, "ok": 6,
               "details": 7, "digest": 9}


def _order(key: str) -> tuple[int, str]:
    return (_PRECEDENCE.get(key, 8), key)


def member_at(value: Any, path: str) -> Any:
    """The member of an observation at ``path`` (``<absent>`` when there is none)."""
    import re

    current = value
    for name, index in re.findall(r"\.?([^.\[\]]+)|\[(\d+)\]", path):
        try:
            current = current[int(index)] if index else current[name]
        except (KeyError, IndexError, TypeError):
            return "<absent>"
    return current


@attrs.frozen
class Outcome:
    """Both servers' observations of a case's steps, up to and including the first disagreement."""

    reference: tuple[Any, ...]
    store: tuple[Any, ...]
    disagreement: int | None
    path: str | None


def run_case(reference: Session, store: Session, steps: Sequence[Step]) -> Outcome:
    """Run ``steps`` on both sessions in lockstep; stop at the first disagreement."""
    seen_reference: list[Any] = []
    seen_store: list[Any] = []
    for index, step in enumerate(steps):
        one = observe(reference, step)
        two = observe(store, step)
        seen_reference.append(one)
        seen_store.append(two)
        path = first_difference(one, two)
        if path is not None:
            return Outcome(tuple(seen_reference), tuple(seen_store), index, path)
        if "gone" in one:
            break
    return Outcome(tuple(seen_reference), tuple(seen_store), None, None)


Runner = Callable[[Sequence[Step]], Outcome]


def shrink(steps: Sequence[Step], target: Step, runner: Runner,
           budget: int = 400) -> tuple[list[Step], Outcome]:
    """The fewest steps (delta debugging) whose first disagreement is still at ``target``."""
    def failing(candidate: list[Step]) -> Outcome | None:
        outcome = runner(candidate)
        if outcome.disagreement is not None and candidate[outcome.disagreement] is target:
            return outcome
        return None

    current = list(steps[: steps.index(target) + 1])
    best = failing(current)
    if best is None:
        raise RuntimeError("the disagreement did not repeat")
    runs = 1
    chunks = 2
    while len(current) > 1 and runs < budget:
        before = current[:-1]
        size = max(1, len(before) // chunks)
        reduced = False
        for start in range(0, len(before), size):
            candidate = before[:start] + before[start + size:] + [target]
            runs += 1
            found = failing(candidate)
            if found is not None:
                current, best = candidate, found
                chunks = max(chunks - 1, 2)
                reduced = True
                break
            if runs >= budget:
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(chunks * 2, len(before))
    return current, best
