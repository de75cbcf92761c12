"""``convledger demo [--db PATH]``: a scripted conversation through the step loop.

It runs the reference step loop (:mod:`convledger.host.loop`, chapters
``provider.md`` and ``facts.md``) with the deterministic fakes on the embedded
SQLite store: a sandbox probe, a step retried after a provider failure, a tool
call, a state slot, a schedule that fires late, a child that outlives its
successful parent and one stopped when its parent is cancelled. It prints the
conversation's ledger as a table (seq, kind, one-line summary) and writes the
conversation's archive next to the database; it names the database and the ids
of the conversation and its two children.

Exit status: 0 on success, 1 when the database already holds the demo
conversation, 3 when the database cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.host import (
    FakeChildExecutor,
    FakeClock,
    FakeProvider,
    FakeSandboxProber,
    FakeTimer,
    Host,
    SequentialIds,
    events_of,
)
from convledger.tools.canon import EXIT_OK, EXIT_PROBLEMS, EXIT_STORAGE

CONVERSATION = "demo"
RESEARCH, BOOKING = "demo-child-research", "demo-child-booking"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="run a scripted conversation with fake host capabilities and print its ledger",
        description=(
            "Run a scripted multi-turn conversation on the embedded SQLite store with a fake "
            "provider (a retried step, a tool call, a state slot, a late schedule, child "
            "conversations) and print the ledger."
        ),
    )
    parser.add_argument("--db", metavar="PATH", help="the SQLite file (default: a temp dir)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; return the exit code."""
    from convledger.sqlite import SqliteStore

    path = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="convledger-demo-")) / (
        "demo.sqlite"
    )
    try:
        store = SqliteStore(path)
    except (LedgerError, OSError) as error:
        print(f"cannot open {path}: {error}")
        return EXIT_STORAGE
    try:
        if store.head(CONVERSATION) != 0:
            print(f"{path} already holds the demo conversation; use a new --db")
            return EXIT_PROBLEMS
        script(store)
        print(render(tuple(events_of(store, CONVERSATION))))
        for child in (RESEARCH, BOOKING):
            states = [str(event.payload["state"]) for event in events_of(store, child)
                      if isinstance(event.payload, dict) and "state" in event.payload]
            print(f"child {child}: {' -> '.join(states)}")
        archive = path.with_name(path.stem + "-archive.json")
        archive.write_bytes(store.export_conversation(CONVERSATION))
    finally:
        store.close()
    print(f"database: {path}")
    print(f"conversations: {', '.join((CONVERSATION, RESEARCH, BOOKING))} "
          f"(export one with: convledger export {path} ID)")
    print(f"archive written to {archive}")
    return EXIT_OK


def script(store: object) -> None:
    """The scripted conversation (see the module docstring)."""
    clock = FakeClock()
    host = Host(
        store,  # type: ignore[arg-type]
        clock=clock,
        ids=SequentialIds("demo"),
        provider=FakeProvider(["fail", "tool", "ok"], provider="fake-provider"),
        timer=FakeTimer(),
        children=FakeChildExecutor(),
        prober=FakeSandboxProber(["python"]),
    )
    host.probe_sandbox(CONVERSATION, ["python", "network"])
    first = host.accept(CONVERSATION, "What is the weather in Lisbon tomorrow?")
    host.run(CONVERSATION, first, spawn=[RESEARCH],
             tools={"lookup": lambda args: {"forecast": "sunny", "high": 24}})
    host.settle_child(CONVERSATION, RESEARCH, "running")
    host.set_state(CONVERSATION, "units", "metric", actor="user")
    host.set_schedule(CONVERSATION, "reminder", after_ms=60_000)
    clock.advance(90_000)
    host.fire_due()
    host.settle_child(CONVERSATION, RESEARCH, "finished")
    second = host.accept(CONVERSATION, "Book a table for two, then stop.")
    host.run(CONVERSATION, second, spawn=[BOOKING], end_reason="cancelled")


def render(events: tuple[Envelope, ...]) -> str:
    """The ledger as a table: seq, kind, one-line summary."""
    lines = [f"{'seq':>4}  {'kind':<20}  summary", f"{'-' * 4}  {'-' * 20}  {'-' * 50}"]
    for event in events:
        lines.append(f"{event.seq:>4}  {event.kind:<20}  {summary(event)}")
    return "\n".join(lines)


def summary(event: Envelope) -> str:
    """One line saying what the event records."""
    payload = event.payload
    if not isinstance(payload, dict):
        return str(payload)
    get = payload.get
    match event.kind:
        case "runtime/transition":
            recorded = get("input")
            assert isinstance(recorded, dict)
            extra = f" reason={recorded['reason']}" if "reason" in recorded else ""
            return f"{get('type')} run={recorded.get('runId', '-')}{extra}"
        case "provider/message":
            message = get("message")
            role = message.get("role") if isinstance(message, dict) else "?"
            return f"body {str(get('sha256'))[:12]} role={role}"
        case "provider/request":
            shas = get("messageShas")
            count = len(shas) if isinstance(shas, list) else 0
            return (f"run={get('runId')} step={get('stepNumber')} attempt={get('attempt')} "
                    f"messages={count} body={str(get('bodySha256'))[:12]}")
        case "provider/response":
            return (f"run={get('runId')} step={get('stepNumber')} attempt={get('attempt')} "
                    f"response={_compact(get('response'))}")
        case "state/set":
            return f"{get('name')}={_compact(get('value'))} v{get('version')} by {get('actor')}"
        case "child/state":
            return f"{get('childConversationId')} {get('state')}"
    return _compact(payload)


def _compact(value: JsonValue) -> str:
    """A short JSON-ish rendering."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_compact(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact(item) for item in value) + "]"
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false: JSON's spelling, not Python's
    return str(value)
