"""The transition rules: pure functions from (view, transition) to a decision.

Read one function per transition next to its section of ``transitions.md``.
Each returns a :class:`Decision`; only an *applied* decision carries writes,
and every applied decision moves the head version by exactly one (TRN-003).
Refusals raise typed errors before anything is written (TRN-004, TRN-007).

The rules never see a clock or an id generator: times come from the
transition's event (``at``, its occurredAt) and ids from the caller, so a
replay of the ledger decides exactly what the original calls decided
(TRN-100).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from convledger.canonical import JsonValue
from convledger.errors import InvalidInputError
from convledger.runtime.records import (
    REASON_STATE,
    Admission,
    Head,
    Message,
    MessageRole,
    MessageStatus,
    Run,
    RunState,
)
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    Recover,
    Terminal,
    Transition,
    summarize_draft,
)
from convledger.runtime.view import (
    Admitted,
    Decision,
    HeadWrite,
    Record,
    RuntimeView,
    Status,
)


def decide(view: RuntimeView, conversation_id: str, transition: Transition, at: str) -> Decision:
    """Apply one validated transition to the state ``view`` shows, at time ``at``."""
    # TRN-019: every record time is ``at``, the transition's occurredAt text, never a clock.
    if isinstance(transition, Accept):
        return _accept(view, conversation_id, transition, at)
    head = view.head()
    if head is None:
        return Decision(Status.NOT_FOUND, 0)  # TRN-001, TRN-070: nothing to act on yet
    if isinstance(transition, Compact):
        return _compact(view, head, transition, at)
    run = view.run(transition.run_id)
    if run is None:
        return Decision(Status.NOT_FOUND, head.version)  # TRN-080: never another conversation's
    return _RUN_RULES[type(transition)](view, head, run, transition, at)


# -- accept (TRN-020 .. TRN-025) -------------------------------------------------------------


def _accept(view: RuntimeView, conversation_id: str, accept: Accept, at: str) -> Decision:
    head = view.head()
    version = 0 if head is None else head.version
    earlier = view.admission(accept.idempotency_key)
    if earlier is not None:  # TRN-021: the original identities, forever
        return Decision(
            Status.DUPLICATE,
            version,
            run=view.run(earlier.run_id),
            admitted=Admitted(earlier.input_id, earlier.run_id, earlier.assistant_message_id),
        )
    _refuse_identities(view, accept)
    active = view.active_runs()
    newest = active[-1] if active else None
    if newest is not None and newest.state is RunState.QUEUED and newest.fencing_token == 0:
        run = attrs.evolve(  # TRN-023: coalesce into the queued run nobody has taken yet
            newest,
            input_ids=(*newest.input_ids, accept.input_id),
            revision=newest.revision + 1,
            updated_at=at,
        )
    else:
        # TRN-016, TRN-017: revision 0, fencingToken 0, the next ordinal, not placed.
        run = Run(
            run_id=accept.run_id,
            conversation_id=conversation_id,
            ordinal=view.last_run_ordinal() + 1,
            state=RunState.QUEUED,
            reason=None,
            policy=None,
            owner=None,
            revision=0,
            fencing_token=0,
            input_ids=(accept.input_id,),
            assistant_message_id=accept.assistant_message_id,
            placed=False,
            checkpoint=None,
            last_operation=None,
            absorbed_into_run_id=None,
            created_at=at,
            updated_at=at,
        )
    admission = Admission(
        conversation_id=conversation_id,
        idempotency_key=accept.idempotency_key,
        input_id=accept.input_id,
        run_id=run.run_id,
        assistant_message_id=run.assistant_message_id,
        ordinal=view.last_admission_ordinal() + 1,
        admitted_at=at,
        message=accept.message,
    )
    # TRN-025: the head starts at version 1 (_applied); no message is placed.
    admitted = Admitted(accept.input_id, run.run_id, run.assistant_message_id)
    return _applied(conversation_id, version, (run, admission), run=run, admitted=admitted)


def _refuse_identities(view: RuntimeView, accept: Accept) -> None:
    """TRN-022: a new admission may not reuse a run id or a message id of the conversation."""
    if len({accept.input_id, accept.run_id, accept.assistant_message_id}) < 3:
        raise _identity("input_id", "inputId, runId and assistantMessageId must differ")
    if view.run(accept.run_id) is not None:
        raise _identity("run_id", f"run {accept.run_id!r} already exists")
    for field, message_id in (
        ("input_id", accept.input_id),
        ("assistant_message_id", accept.assistant_message_id),
    ):
        if view.message_in_use(message_id):
            raise _identity(field, f"message id {message_id!r} is already in use")


def _identity(field: str, why: str) -> InvalidInputError:
    return InvalidInputError(why, requirement="TRN-022", field=field)


# -- acquire (TRN-030 .. TRN-034) ------------------------------------------------------------


def _acquire(view: RuntimeView, head: Head, run: Run, acquire: Acquire, at: str) -> Decision:
    if run.state is not RunState.QUEUED:  # TRN-030
        return Decision(Status.CONFLICT, head.version, run=run)
    for other in view.active_runs():  # TRN-031: causal order
        if other.state.owned or (other.state is RunState.QUEUED and other.ordinal < run.ordinal):
            return Decision(Status.CONFLICT, head.version, run=run)
    # TRN-033: running, owned, revision and fencingToken raised by 1 each.
    acquired = attrs.evolve(
        run,
        state=RunState.RUNNING,
        owner=acquire.owner,
        revision=run.revision + 1,
        fencing_token=run.fencing_token + 1,
        placed=True,
        updated_at=at,
    )
    placed = () if run.placed else _placement(view, run, at)
    return _applied(run.conversation_id, head.version, (acquired, *placed), run=acquired)


def _placement(view: RuntimeView, run: Run, at: str) -> tuple[Message, ...]:
    """TRN-032: the run's inputs, then its pending answer, after everything placed so far."""
    bounds = view.position_bounds()
    position = 1 if bounds is None else bounds[1] + 1
    messages = []
    for input_id in run.input_ids:
        admission = view.admission_of_input(input_id)
        assert admission is not None, "every input of a run has its admission"
        messages.append(
            _message(run, input_id, position, MessageRole.USER, admission.message, at)
        )
        position += 1
    answer = _message(run, run.assistant_message_id, position, MessageRole.ASSISTANT, None, at)
    messages.append(attrs.evolve(answer, status=MessageStatus.PENDING))
    return tuple(messages)


def _message(
    run: Run | None, message_id: str, position: int, role: MessageRole, content: object, at: str
) -> Message:
    return Message(
        conversation_id="" if run is None else run.conversation_id,
        message_id=message_id,
        position=position,
        role=role,
        run_id=None if run is None else run.run_id,
        status=MessageStatus.FINAL,
        content=content,  # type: ignore[arg-type]  # JSON from a validated transition
        draft=None,
        active=True,
        created_at=at,
        updated_at=at,
    )


# -- the fenced transitions: checkpoint, operation, terminal (TRN-040 .. TRN-066) ------------


def _fence_holds(run: Run, fence: Fence) -> bool:
    """TRN-040: only the current owner, at the current revision and token, changes a run."""
    return (
        run.state.owned
        and run.owner == fence.owner
        and run.revision == fence.revision
        and run.fencing_token == fence.fencing_token
    )


def _checkpoint(view: RuntimeView, head: Head, run: Run, step: Checkpoint, at: str) -> Decision:
    if not _fence_holds(run, step.fence):
        return Decision(Status.CONFLICT, head.version, run=run)
    summary = summarize_draft(step.draft)
    # TRN-043: the run's checkpoint and revision + 1; its answer becomes the draft.
    changed = attrs.evolve(run, checkpoint=summary, revision=run.revision + 1, updated_at=at)
    answer = _answer(view, run)
    # a replay knows the summary only, never the draft's body (TRN-041)
    content: JsonValue = step.draft if isinstance(step.draft, dict) else None
    drafted = attrs.evolve(
        answer, status=MessageStatus.DRAFT, content=content, draft=summary, updated_at=at
    )
    return _applied(run.conversation_id, head.version, (changed, drafted), run=changed)


def _operation(view: RuntimeView, head: Head, run: Run, step: Operation, at: str) -> Decision:
    if not _fence_holds(run, step.fence):
        return Decision(Status.CONFLICT, head.version, run=run)
    changed = attrs.evolve(
        run, last_operation=step.operation, revision=run.revision + 1, updated_at=at
    )
    return _applied(run.conversation_id, head.version, (changed,), run=changed)


def _terminal(view: RuntimeView, head: Head, run: Run, end: Terminal, at: str) -> Decision:
    others = [view.run(run_id) for run_id in end.absorb_run_ids]
    if any(other is None for other in others):  # TRN-009: not_found comes before conflict
        return Decision(Status.NOT_FOUND, head.version, run=run)
    if not _fence_holds(run, end.fence):  # TRN-060
        return Decision(Status.CONFLICT, head.version, run=run)
    absorbed: list[Record] = []
    for other in others:  # TRN-064: queued, never taken, later in causal order
        assert other is not None
        if other.state is not RunState.QUEUED or other.fencing_token or other.ordinal < run.ordinal:
            return Decision(Status.CONFLICT, head.version, run=run)
        # TRN-065: superseded, absorbed into this run, revision + 1, no message placed.
        absorbed.append(_ended(other, "absorbed", at, absorbed_into=run.run_id))
    # TRN-063: the state by TRN-013, the owner lets go, the answer final.
    ended = _ended(run, end.reason, at, policy=end.policy)
    answer = attrs.evolve(
        _answer(view, run),
        status=MessageStatus.FINAL,
        content=end.message,
        draft=None,
        updated_at=at,
    )
    writes = (ended, answer, *absorbed)  # TRN-066: one decision, one event, all or none
    return _applied(run.conversation_id, head.version, writes, run=ended)


def _ended(
    run: Run, reason: str, at: str, *, policy: str | None = None, absorbed_into: str | None = None
) -> Run:
    """TRN-013: the terminal record for ``reason``; the owner lets go."""
    return attrs.evolve(
        run,
        state=REASON_STATE[reason],
        reason=reason,
        policy=policy,
        owner=None,
        absorbed_into_run_id=absorbed_into,
        revision=run.revision + 1,
        updated_at=at,
    )


def _answer(view: RuntimeView, run: Run) -> Message:
    answer = view.message(run.assistant_message_id)
    assert answer is not None, "an acquired run has placed its answer (TRN-032)"
    return answer


# -- interrupt and recover (TRN-050 .. TRN-055) ----------------------------------------------


def _interrupt(view: RuntimeView, head: Head, run: Run, step: Interrupt, at: str) -> Decision:
    if run.state is RunState.INTERRUPT_REQUESTED:
        return Decision(Status.DUPLICATE, head.version, run=run)  # TRN-051: already asked
    if run.state is RunState.RUNNING:
        asked = attrs.evolve(
            run, state=RunState.INTERRUPT_REQUESTED, revision=run.revision + 1, updated_at=at
        )
        return _applied(run.conversation_id, head.version, (asked,), run=asked)
    if run.state is RunState.QUEUED:  # TRN-050: nobody runs it, so it stops at once
        stopped = _ended(run, "interrupted", at)
        return _applied(
            run.conversation_id, head.version, (stopped, *_failed_answer(view, run, at)),
            run=stopped,
        )
    return Decision(Status.CONFLICT, head.version, run=run)


def _recover(view: RuntimeView, head: Head, run: Run, step: Recover, at: str) -> Decision:
    if not run.state.owned or run.revision != step.revision:  # TRN-053
        return Decision(Status.CONFLICT, head.version, run=run)
    if step.action == "requeue":  # TRN-054: validate() demanded replaySafe evidence
        requeued = attrs.evolve(
            run, state=RunState.QUEUED, owner=None, revision=run.revision + 1, updated_at=at
        )
        return _applied(run.conversation_id, head.version, (requeued,), run=requeued)
    abandoned = _ended(run, "abandoned", at)  # TRN-055: the answer fails with it
    writes: tuple[Record, ...] = (abandoned, *_failed_answer(view, run, at))
    return _applied(run.conversation_id, head.version, writes, run=abandoned)


def _failed_answer(view: RuntimeView, run: Run, at: str) -> tuple[Message, ...]:
    """The run's placed answer marked failed; nothing when the run never placed one."""
    if not run.placed:
        return ()
    answer = _answer(view, run)
    # A draft's body is not in the ledger, so a failed answer keeps no content (TRN-055).
    failed = attrs.evolve(
        answer, status=MessageStatus.FAILED, content=None, draft=None, updated_at=at
    )
    return (failed,)


# -- compact (TRN-070 .. TRN-075) ------------------------------------------------------------


def _compact(view: RuntimeView, head: Head, compact: Compact, at: str) -> Decision:
    if compact.expected_version != head.version:  # TRN-071
        return Decision(Status.CONFLICT, head.version)
    first = view.message(compact.first_message_id)
    last = view.message(compact.last_message_id)
    opening = view.first_active_message()
    if first is None or last is None or not first.active or not last.active:
        raise _range("first_message_id", "the range must name two active messages")
    if opening is None or first.message_id != opening.message_id:
        raise _range("first_message_id", "the range must start at the first active message")
    if last.position < first.position:
        raise _range("last_message_id", "the range must end at or after its first message")
    covered = view.active_messages(first.position, last.position)
    active_runs = {run.run_id for run in view.active_runs()}
    if any(message.run_id in active_runs for message in covered):
        raise _range("last_message_id", "a message of an active run cannot be compacted")
    if view.message_in_use(compact.summary_message_id):
        raise InvalidInputError(
            "the summary needs an unused message id",
            requirement="TRN-073",
            field="summary_message_id",
        )
    bounds = view.position_bounds()
    assert bounds is not None
    summary = attrs.evolve(  # TRN-074: the summary takes the first position of the history
        _message(None, compact.summary_message_id, bounds[0] - 1, MessageRole.SUMMARY,
                 compact.summary, at),
        conversation_id=head.conversation_id,
    )
    retired = tuple(attrs.evolve(item, active=False, updated_at=at) for item in covered)
    return _applied(head.conversation_id, head.version, (*retired, summary))  # TRN-075: no run


def _range(field: str, why: str) -> InvalidInputError:
    return InvalidInputError(why, requirement="TRN-072", field=field)


# -- shared ------------------------------------------------------------------------------------


def _applied(
    conversation_id: str,
    version: int,
    writes: tuple[Record, ...],
    *,
    run: Run | None = None,
    admitted: Admitted | None = None,
) -> Decision:
    """TRN-003: every applied transition moves the head from ``version`` to ``version + 1``."""
    head = HeadWrite(Head(conversation_id, version + 1), expected=version)
    return Decision(
        Status.APPLIED, version + 1, run=run, admitted=admitted, head_write=head, writes=writes
    )


_RunRule = Callable[[RuntimeView, Head, Run, "Transition", str], Decision]
_RUN_RULES: dict[type, _RunRule] = {
    Acquire: _acquire,  # type: ignore[dict-item]
    Checkpoint: _checkpoint,  # type: ignore[dict-item]
    Operation: _operation,  # type: ignore[dict-item]
    Interrupt: _interrupt,  # type: ignore[dict-item]
    Recover: _recover,  # type: ignore[dict-item]
    Terminal: _terminal,  # type: ignore[dict-item]
}
