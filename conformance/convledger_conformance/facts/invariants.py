"""Invariants of the provider facts (chapter ``provider.md``) and a program that exercises them.

:func:`drive` runs a short random conversation through a :class:`Host`
(the reference one, or a broken one a test hands in) on a store from the
factory: a seeded fake provider fails, times out, calls a tool and succeeds at
random, and during a run's first call a user sends the next input, which the
runtime admits into a successor run. :class:`Witness` sits between the host
and the provider and checks, at the moment of each call, that the request was
already recorded (PRV-001). :func:`provider_problems` then checks the ledger:

* every request has at most one response with its identity, after it (PRV-010, PRV-011);
* the steps of a run are 0..n and the attempts of a step 1..k without gaps (PRV-002);
* every hash a request names has exactly one ``provider/message`` at or before
  it, whose hash recomputes, and the body hash recomputes (PRV-003 .. PRV-005);
* retries are bracketed and never follow a tool that ran (PRV-012, PRV-013);
* no request carries an input of a later run, and later runs see inputs and
  answers in run order (PRV-020).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import attrs

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.host import (
    FakeChildExecutor,
    FakeClock,
    FakeProvider,
    FakeSandboxProber,
    FakeTimer,
    Host,
    ProviderFailure,
    ProviderReply,
    SequentialIds,
    events_of,
)
from convledger.host.messages import body_sha, instructions_sha, ledger_form, message_sha
from convledger.runtime.store import TransitionStore
from convledger.store import LedgerStore

Problem = tuple[tuple[str, ...], str]
CONVERSATION = "conv-host"


@attrs.define
class Witness:
    """A provider wrapper that checks, at each call, that its request is already recorded."""

    store: LedgerStore
    inner: FakeProvider
    interleave: Callable[[], None] | None = None
    problems: list[Problem] = attrs.Factory(list)
    answers: dict[str, str] = attrs.Factory(dict)
    """Reply text -> run id of the request it answered."""
    after_tool: set[tuple[str, int, int]] = attrs.Factory(set)
    """(run id, step, attempt) of attempts that failed after a tool ran."""
    _interleaved: set[str] = attrs.Factory(set)

    def call(self, model_id: str, instructions: str, messages: Sequence[object]) -> ProviderReply:
        """Check the last recorded event is this call's request, then call the fake."""
        head = self.store.head(CONVERSATION)
        last = self.store.read(CONVERSATION, from_seq=max(head, 1), limit=1).items
        shas = [message_sha(ledger_form(message)) for message in messages]
        expected = body_sha(instructions_sha(instructions), shas)
        if not last or last[0].kind != "provider/request" or not isinstance(
            last[0].payload, dict
        ):
            self.problems.append((("PRV-001",), "a provider call without its request before it"))
            return self.inner.call(model_id, instructions, messages)
        request = last[0].payload
        if request["bodySha256"] != expected:
            self.problems.append((("PRV-001", "PRV-003"), "the request recorded is not the call"))
        run_id = str(request["runId"])
        if self.interleave is not None and run_id not in self._interleaved:
            self._interleaved.add(run_id)
            self.interleave()
        try:
            reply = self.inner.call(model_id, instructions, messages)
        except ProviderFailure as failure:
            if failure.after_tool:
                self.after_tool.add(
                    (run_id, int(str(request["stepNumber"])), int(str(request["attempt"])))
                )
            raise
        self.answers[reply.text] = run_id
        return reply


def make_host(
    host_class: type[Host],
    store: LedgerStore,
    provider: object,
    *,
    namespace: str = "h",
    **options: object,
) -> Host:
    """A host of ``host_class`` with fresh fakes and ``provider``."""
    return host_class(
        store,
        clock=FakeClock(),
        ids=SequentialIds(namespace),
        provider=provider,  # type: ignore[arg-type]
        timer=FakeTimer(),
        children=FakeChildExecutor(),
        prober=FakeSandboxProber(()),
        **options,  # type: ignore[arg-type]
    )


@attrs.frozen
class Driven:
    """What :func:`drive` observed: the ledger, the witness and the input ownership."""

    events: tuple[Envelope, ...]
    witness: Witness
    inputs: dict[str, str]
    """Input text -> the run it was admitted into."""
    ordinals: dict[str, int]
    """Run id -> ordinal."""


def drive(
    host_class: type[Host],
    store: TransitionStore,
    *,
    seed: int | None,
    turns: int,
    script: Sequence[str] = (),
) -> Driven:
    """Run ``turns`` inputs; each run's first call lets the next input arrive early."""
    inputs: dict[str, str] = {}
    pending: list[str] = []
    counter = [0]
    witness = Witness(store, FakeProvider(script, seed=seed))
    host = make_host(host_class, store, witness, max_attempts=3)

    def arrive() -> None:
        if counter[0] >= turns:
            return
        counter[0] += 1
        text = f"input {counter[0]}"
        run_id = host.accept(CONVERSATION, text)
        inputs[text] = run_id
        if run_id not in pending:
            pending.append(run_id)

    witness.interleave = arrive
    arrive()
    while pending:
        run_id = pending.pop(0)
        host.run(CONVERSATION, run_id, tools={"lookup": lambda args: {"found": args["query"]}})
        if not pending:
            arrive()
    ordinals: dict[str, int] = {}
    for run_id in set(inputs.values()):
        run = store.load_run(CONVERSATION, run_id)
        assert run is not None
        ordinals[run_id] = run.ordinal
    return Driven(tuple(events_of(store, CONVERSATION)), witness, inputs, ordinals)


def _payload(event: Envelope) -> dict[str, JsonValue]:
    assert isinstance(event.payload, dict)
    return event.payload


def provider_problems(driven: Driven) -> list[Problem]:
    """Every broken provider invariant of the driven ledger (module docstring)."""
    problems = list(driven.witness.problems)
    problems += _identity_problems(driven.events, driven.witness.after_tool)
    problems += _content_problems(driven.events)
    problems += _isolation_problems(driven)
    return problems


def _identity_problems(
    events: Sequence[Envelope], after_tool: set[tuple[str, int, int]]
) -> list[Problem]:
    problems: list[Problem] = []
    attempts: dict[tuple[str, int], list[int]] = defaultdict(list)
    requests: dict[tuple[str, int, int], int] = {}
    responses: dict[tuple[str, int, int], int] = defaultdict(int)
    pending_retry: int | None = None
    for event in events:
        if event.kind == "retry/scheduled":
            pending_retry = int(str(_payload(event)["attempt"]))
        elif event.kind == "retry/started" and pending_retry != _payload(event)["attempt"]:
            problems.append((("PRV-012",), "retry/started without its retry/scheduled"))
        elif event.kind == "provider/request":
            payload = _payload(event)
            run, step, attempt = str(payload["runId"]), int(str(payload["stepNumber"])), int(
                str(payload["attempt"])
            )
            if attempt > 1 and pending_retry != attempt:
                problems.append((("PRV-012",), f"attempt {attempt} without retry facts"))
            if any((run, step, earlier) in after_tool for earlier in range(1, attempt)):
                problems.append((("PRV-013",), "a step whose tool ran was retried"))
            pending_retry = None
            attempts[(run, step)].append(attempt)
            requests[(run, step, attempt)] = event.seq
        elif event.kind == "provider/response":
            payload = _payload(event)
            key = (str(payload["runId"]), int(str(payload["stepNumber"])),
                   int(str(payload["attempt"])))
            responses[key] += 1
            if key not in requests:
                problems.append((("PRV-010",), f"response {key} before or without its request"))
    for key, count in responses.items():
        if count > 1:
            problems.append((("PRV-011",), f"{count} responses for {key}"))
    steps: dict[str, list[int]] = defaultdict(list)
    for (run, step), numbers in attempts.items():
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append((("PRV-002",), f"attempts of {run}/{step} are {numbers}"))
        steps[run].append(step)
    for run, numbers in steps.items():
        if sorted(numbers) != list(range(len(numbers))):
            problems.append((("PRV-002",), f"steps of {run} are {sorted(numbers)}"))
    return problems


def _content_problems(events: Sequence[Envelope]) -> list[Problem]:
    problems: list[Problem] = []
    bodies: dict[str, int] = defaultdict(int)
    for event in events:
        payload = event.payload
        if event.kind == "provider/message" and isinstance(payload, dict):
            bodies[str(payload["sha256"])] += 1
            if message_sha(payload["message"]) != payload["sha256"]:
                problems.append((("PRV-005",), "a provider/message hash does not recompute"))
            if bodies[str(payload["sha256"])] > 1:
                problems.append((("PRV-004",), "a body recorded twice in one conversation"))
        elif event.kind == "provider/request" and isinstance(payload, dict):
            shas = [str(item) for item in payload["messageShas"]]
            if any(bodies[sha] != 1 for sha in shas):
                problems.append((("PRV-004",), "a named body without exactly one message before"))
            if body_sha(str(payload["instructionsSha256"]), shas) != payload["bodySha256"]:
                problems.append((("PRV-003",), "bodySha256 does not recompute"))
    return problems


def _isolation_problems(driven: Driven) -> list[Problem]:
    """PRV-020: run order of every body a request sends is non-decreasing, inputs first."""
    problems: list[Problem] = []
    texts: dict[str, JsonValue] = {}
    for event in driven.events:
        payload = event.payload
        if event.kind == "provider/message" and isinstance(payload, dict):
            texts[str(payload["sha256"])] = payload["message"]
        elif event.kind == "provider/request" and isinstance(payload, dict):
            own = driven.ordinals.get(str(payload["runId"]), 0)
            order: list[tuple[int, int]] = []
            for sha in payload["messageShas"]:
                owner = _owner(texts.get(str(sha)), driven)
                if owner is not None:
                    order.append(owner)
            if any(ordinal > own for ordinal, _ in order):
                problems.append((("PRV-020",), "a request carries a later run's input"))
            if order != sorted(order):
                problems.append((("PRV-020",), f"bodies out of run order: {order}"))
    return problems


def _owner(body: JsonValue, driven: Driven) -> tuple[int, int] | None:
    """(run ordinal, 0 for an input / 1 for an answer) of a history body, else None."""
    if not isinstance(body, dict) or not isinstance(body.get("content"), dict):
        return None
    content = body["content"]
    assert isinstance(content, dict)
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts or not isinstance(parts[0], dict):
        return None
    text = str(parts[0].get("text"))
    if body.get("role") == "user" and text in driven.inputs:
        return (driven.ordinals[driven.inputs[text]], 0)
    run_id = driven.witness.answers.get(text)
    if body.get("role") == "assistant" and run_id in driven.ordinals:
        return (driven.ordinals[run_id], 1)
    return None
