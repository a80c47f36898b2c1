"""Commands to one worker and what workers report about themselves, written once for both
dialects: the management API sends a command (a row of ``worker_commands``, announced to the
worker at once where the database has notifications); the worker reads its pending ones,
acts, and replies in the same row; its report (``executors.details``) says how it runs."""

from __future__ import annotations

from pgtasks.sysdb.primitives import Primitives
from pgtasks.sysdb.records import WorkerCommand


def command_announcement(executor_id: str) -> str:
    """The notification payload that wakes worker ``executor_id`` for a command: it holds a
    space, which no queue name does, so no queue's announcement can be taken for it."""
    return f"command {executor_id}"


class CommandStore(Primitives):
    """``worker_command_*``, ``worker_commands_*`` and ``executor_report``; see
    :class:`pgtasks.sysdb.interface.SystemDatabase`."""

    def worker_command_send(self, command: WorkerCommand) -> None:
        args = {
            "command_id": command.command_id,
            "executor_id": command.executor_id,
            "command": command.command,
            "arguments": command.arguments,
        }
        with self._transaction() as conn:
            self._on(conn, "worker_command_send", args)
            self._announce_on(conn, command_announcement(command.executor_id))

    def worker_commands_pending(self, executor_id: str, max_age_ms: int) -> list[WorkerCommand]:
        rows = self._read("worker_commands_pending", {"executor_id": executor_id, "max_age_ms": max_age_ms})
        return [_command(r) for r in rows]

    def worker_command_reply(self, command_id: str, reply: str) -> None:
        self._write("worker_command_reply", {"command_id": command_id, "reply": reply})

    def worker_command_get(self, command_id: str) -> WorkerCommand | None:
        rows = self._read("worker_command_get", {"command_id": command_id})
        return _command(rows[0]) if rows else None

    def worker_command_forget(self, command_id: str) -> None:
        self._write("worker_command_forget", {"command_id": command_id})

    def worker_commands_clear(self, executor_id: str) -> None:
        self._write("worker_commands_clear", {"executor_id": executor_id})

    def executor_report(self, executor_id: str, details: str) -> bool:
        return self._write("executor_report", {"executor_id": executor_id, "details": details}).count == 1


def _command(row: dict[str, object]) -> WorkerCommand:
    return WorkerCommand(
        command_id=str(row["command_id"]),
        executor_id=str(row["executor_id"]),
        command=str(row["command"]),
        arguments=str(row["arguments"]),
        created_at=int(row["created_at"]),  # type: ignore[call-overload]
        reply=None if row["reply"] is None else str(row["reply"]),
    )
