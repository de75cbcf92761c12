"""Schedules: the injected timer places, the loop records (FCT-010 .. FCT-014)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

from convledger.canonical import JsonValue
from convledger.host.base import HostBase, Schedule, stamp
from convledger.host.rows import ScheduleRow


class ScheduleFacts(HostBase):
    """Setting, cancelling and firing schedules with the injected timer and clock."""

    def set_schedule(
        self,
        conversation_id: str,
        schedule_id: str,
        *,
        after_ms: int,
        every: bool = False,
        action: Callable[[], None] | None = None,
    ) -> None:
        """FCT-010: place with the timer first, then record ``schedule/set``."""
        placed = self.timer.place(
            schedule_id, self.clock.now() + datetime.timedelta(milliseconds=after_ms)
        )
        self.schedules[schedule_id] = Schedule(
            conversation_id, "every" if every else "after", after_ms if every else None, action
        )
        kind = "every" if every else "after"
        self._schedule_facts(
            ScheduleRow(conversation_id, schedule_id, kind, stamp(placed), "active", 0),
            [("schedule/set", {"id": schedule_id, "kind": kind, "nextAt": stamp(placed)})],
        )

    def _schedule_facts(self, row: ScheduleRow, facts: Sequence[tuple[str, JsonValue]]) -> None:
        """SQL-068: the schedule's events and its row together (events alone without rows)."""
        drafts = [self._draft(kind, payload) for kind, payload in facts]
        if not self._write_row(row, [(row.conversation_id, drafts)], skip_purged=False):
            self.store.append(row.conversation_id, drafts)

    def cancel_schedule(self, schedule_id: str) -> None:
        """FCT-013: remove from the timer, record ``schedule/cancelled``."""
        schedule = self.schedules.pop(schedule_id)
        self.timer.cancel(schedule_id)
        self._schedule_facts(
            ScheduleRow(schedule.conversation_id, schedule_id, schedule.kind, None, "cancelled",
                        self._occurrences.get(schedule_id, 0)),
            [("schedule/cancelled", {"id": schedule_id})],
        )

    def fire_due(self) -> int:
        """FCT-011, FCT-012, FCT-014: fire what the timer says is due; answer how many."""
        now = self.clock.now()
        fired = 0
        for schedule_id, placed in self.timer.due(now):
            schedule = self.schedules.get(schedule_id)
            if schedule is None:
                continue
            fired += 1
            occurrence = self._occurrences.get(schedule_id, 0) + 1
            self._occurrences[schedule_id] = occurrence
            late = int((now - placed) / datetime.timedelta(milliseconds=1))
            next_at: JsonValue = None
            if schedule.every_ms is not None:
                next_at = stamp(self.timer.place(
                    schedule_id, placed + datetime.timedelta(milliseconds=schedule.every_ms)
                ))
            else:
                del self.schedules[schedule_id]
            facts: list[tuple[str, JsonValue]] = []
            if late > 0:
                facts.append(("schedule/late", {
                    "id": schedule_id, "occurrence": occurrence, "lateByMs": late,
                }))
            facts.append(("schedule/fired", {
                "id": schedule_id, "occurrence": occurrence, "lateByMs": late,
                "nextAt": next_at, "state": "active" if next_at is not None else "done",
            }))
            state = "active" if next_at is not None else "done"
            self._schedule_facts(
                ScheduleRow(schedule.conversation_id, schedule_id, schedule.kind,
                            next_at if isinstance(next_at, str) else None, state, occurrence),
                facts,
            )
            self._act(schedule_id, schedule, occurrence)
        return fired

    def _act(self, schedule_id: str, schedule: Schedule, occurrence: int) -> None:
        if schedule.action is None:
            return
        try:
            schedule.action()
        except Exception as error:  # a failing action is a recorded fact
            self.append(schedule.conversation_id, ("schedule/failed", {
                "id": schedule_id, "occurrence": occurrence, "message": str(error),
                "attempts": 1, "retryAt": None, "terminal": True,
            }))

