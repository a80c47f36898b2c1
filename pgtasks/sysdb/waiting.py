"""Durable waiting, written once for both dialects (docs/waiting.md): a running task's look
at what it waits for (a message, another task's event, or only its time) and its suspension
until then; sending messages; events with their history; streams.

A look and what follows from it are one transaction: a message found is consumed in the
transaction that records the step receiving it, so it is received exactly once; a task that
finds nothing and has long to wait is suspended (DELAYED until its deadline, ``wait_for``
saying what wakes it early) in the transaction that looked, under the lock a sender's wake
takes too, so a message committed after the look wakes the suspended task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.primitives import Primitives, Row
from pgtasks.sysdb.records import (
    Deadline,
    EventEntry,
    MessageInfo,
    MessageParams,
    StepRecord,
    StepWrite,
    StreamEntry,
    WaitParams,
    WaitResult,
    WaitState,
    event_wait_key,
)
from pgtasks.sysdb.rows import existing_step, step_args, written_step


class WaitingStore(Primitives):
    """``task_wait``, ``wait_deadline``, ``message_send``, ``event_publish``, ``stream_write``
    and their readers; see :class:`pgtasks.sysdb.interface.SystemDatabase`."""

    # PostgreSQL: the channel that announces ENQUEUED tasks (SQLite's statements ignore it).
    channel: str = ""
    events_channel: str = ""  # PostgreSQL: the channel that announces tasks that set an event

    def _record_step_on(self, conn: Any, step: StepRecord) -> StepWrite:
        """Record ``step`` on ``conn``, inside the caller's transaction (see ``step_record``)."""
        args = step_args(step)
        row = self._on(conn, "step_record", args).fetchone()
        if row is not None:
            if "task_status" not in row:  # SQLite's insert returns only its own row
                row = self._on(conn, "task_status", args).fetchone()
            return written_step(row["task_status"])
        return existing_step(self._on(conn, "step_owner", args).fetchone(), step)

    def wait_deadline(
        self, step: StepRecord, duration_ms: int, suspend_over_ms: int | None = None
    ) -> Deadline:
        with self._transaction() as conn:
            now = int(self._on(conn, "now_ms").fetchone()["now_ms"])
            wake_at = now + duration_ms
            if self._record_step_on(conn, _with_output(step, str(wake_at))) is not StepWrite.RECORDED:
                return Deadline(wake_at, WaitState.ABANDONED)
            if suspend_over_ms is None or duration_ms <= suspend_over_ms:
                return Deadline(wake_at, WaitState.WAIT)
            args = _suspend_args(step.task_id, step.executor_id, step.claim_token, wake_at, None)
            suspended = self._on(conn, "task_suspend", args).fetchall()
            return Deadline(wake_at, WaitState.SUSPENDED if suspended else WaitState.ABANDONED)

    def task_wait(self, params: WaitParams) -> WaitResult:
        wait_for = params.wait_for
        with self._transaction() as conn:
            if wait_for is not None:
                self._on(conn, "wait_lock", {"wait_for": wait_for})
            found = self._look_on(conn, params)
            if found is None:
                now = int(self._on(conn, "now_ms").fetchone()["now_ms"])
                remaining = params.deadline_ms - now
                if remaining > params.hold_ms:
                    args = _suspend_args(
                        params.task_id, params.executor_id, params.claim_token, params.deadline_ms, wait_for
                    )
                    suspended = self._on(conn, "task_suspend", args).fetchall()
                    return WaitResult(WaitState.SUSPENDED if suspended else WaitState.ABANDONED)
                if remaining > 0:
                    return WaitResult(WaitState.WAIT, remaining_ms=remaining)
            output, tag = found if found is not None else (None, "json")
            if params.step is not None:
                step = _with_output(params.step, output, tag)
                if self._record_step_on(conn, step) is not StepWrite.RECORDED:
                    return WaitResult(WaitState.ABANDONED)
            return WaitResult(WaitState.DONE, output, tag)

    def _look_on(self, conn: Any, params: WaitParams) -> tuple[str, str] | None:
        """What the task waits for, if it is there (a message is consumed here)."""
        if params.topic is not None:
            row = self._on(
                conn, "message_oldest", {"task_id": params.task_id, "topic": params.topic}
            ).fetchone()
            if row is None:
                return None
            self._on(conn, "message_consume", {"message_id": row["message_uuid"]})
            return row["message"], row["serialization"]
        if params.event_task_id is not None:
            args = {"id": params.event_task_id, "key": params.event_key}
            row = self._on(conn, "task_event_get", args).fetchone()
            return None if row is None else (row["value"], row["serialization"])
        return None

    def message_send(self, params: MessageParams, conn: Any = None) -> bool:
        args = {
            "message_id": params.message_id,
            "destination": params.destination,
            "topic": params.topic,
            "message": params.message,
            "serialization": params.serialization,
        }
        wake = {"wait_for": f"message:{params.destination}:{params.topic}", "channel": self.channel}
        if conn is not None:
            return self._send_on_callers(conn, args, wake)
        with self._transaction() as own:
            return send_message(lambda name, values: self._on(own, name, values).fetchall(), args, wake)

    def _send_on_callers(self, conn: Any, args: dict[str, Any], wake: dict[str, Any]) -> bool:
        """:meth:`message_send` inside the caller's own transaction (PostgreSQL only)."""
        raise ConfigurationError(
            "send(conn=...) joins a PostgreSQL transaction; the SQLite database cannot share "
            "a caller's connection"
        )

    def event_publish(self, step: StepRecord, key: str, value: str, serialization: str) -> StepWrite:
        args = {"id": step.task_id, "key": key, "value": value, "tag": serialization}
        with self._transaction() as conn:
            written = self._record_step_on(conn, step)
            if written is StepWrite.RECORDED:
                self._on(conn, "task_event_set", args)
                self._on(conn, "event_history_insert", {**args, "function_id": step.function_id})
                wake = {"wait_for": event_wait_key(step.task_id, key), "channel": self.channel}
                self._on(conn, "tasks_wake", wake)
                self._on(conn, "event_announce", {"channel": self.events_channel, "task_id": step.task_id})
            return written

    def events_of(self, task_id: str) -> list[EventEntry]:
        rows = self._read("events_of", {"task_id": task_id})
        return [EventEntry(r["key"], r["value"], r["serialization"], r["function_id"]) for r in rows]

    def messages_of(self, task_id: str) -> list[MessageInfo]:
        rows = self._read("messages_of", {"task_id": task_id})
        return [
            MessageInfo(
                r["message_uuid"],
                r["topic"],
                r["message"],
                r["serialization"],
                r["created_at_epoch_ms"],
                bool(r["consumed"]),
            )
            for r in rows
        ]

    def stream_write(self, step: StepRecord, key: str, value: str | None, serialization: str) -> StepWrite:
        args = {
            "task_id": step.task_id,
            "key": key,
            "value": value,
            "serialization": serialization,
            "function_id": step.function_id,
        }
        with self._transaction() as conn:
            written = self._record_step_on(conn, step)
            if written is StepWrite.RECORDED:
                self._on(conn, "stream_append", args)
            return written

    def stream_read(self, task_id: str, key: str, start: int, limit: int) -> list[StreamEntry]:
        rows = self._read("stream_read", {"task_id": task_id, "key": key, "start": start, "limit": limit})
        return [StreamEntry(r["position"], r["value"], r["serialization"]) for r in rows]


def send_message(
    run: Callable[[str, dict[str, Any]], list[Row]], args: dict[str, Any], wake: dict[str, Any]
) -> bool:
    """Insert a message (``run`` runs a named statement in the sender's transaction) and wake
    its destination if it waits for it. False: sent before (the same message id)."""
    inserted = bool(run("message_insert", args))
    if not inserted and not run("task_get", {"task_id": args["destination"]}):
        raise LookupError(args["destination"])
    if inserted:
        run("tasks_wake", wake)
    return inserted


def _with_output(step: StepRecord, output: str | None, serialization: str = "json") -> StepRecord:
    return StepRecord(
        task_id=step.task_id,
        function_id=step.function_id,
        function_name=step.function_name,
        output=output,
        error=None,
        serialization=serialization,
        started_at_epoch_ms=step.started_at_epoch_ms,
        executor_id=step.executor_id,
        claim_token=step.claim_token,
    )


def _suspend_args(
    task_id: str, executor_id: str | None, claim_token: str | None, wake_at: int, wait_for: str | None
) -> dict[str, Any]:
    """The parameters of ``task_suspend``: the run (fence), its wake-up time and cause."""
    return {
        "task_id": task_id,
        "executor_id": executor_id,
        "claim_token": claim_token,
        "wake_at": wake_at,
        "wait_for": wait_for,
    }
