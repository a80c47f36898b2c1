"""Celery's remote control (``app.control.broadcast`` and the commands built on it:
``shutdown``, ``pool_grow``, ``add_consumer``, ...) through the database: the command is stored
for each live worker that ``destination`` (or ``pattern``) names, every one by default; each
worker acts on it when woken (NOTIFY on PostgreSQL) or at its next lease round and stores its
reply (``pgtasks/worker/control.py``). With ``reply=True`` the replies that arrive within
``timeout`` come back as Celery gives them: ``[{node name: reply}, ...]``."""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.records import Status

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

FIRST_POLL = 0.01  # seconds between two reads of the replies, doubling up to LAST_POLL
LAST_POLL = 0.1
MATCHERS = ("glob", "pcre")


def broadcast(
    app: Celery,
    nodes: list[str],
    command: str,
    arguments: dict[str, Any],
    reply: bool,
    timeout: float,
    limit: int | None,
    callback: Callable[[dict[str, Any]], Any] | None,
) -> list[dict[str, Any]] | None:
    """Send ``command`` to ``nodes``; their replies when ``reply`` (see the module)."""
    if not isinstance(command, str) or not command:
        raise ConfigurationError(f"a remote control command is a name, not {command!r}")
    admin = app.engine.admin
    sent = {admin.send_worker_command(node, command, arguments): node for node in nodes}
    if not reply:
        return None  # each worker acts on it all the same (unanswered rows go after an hour)
    replies: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    pause = FIRST_POLL
    while sent and (limit is None or len(replies) < limit):
        for command_id in list(sent):
            answer = admin.worker_command_reply(command_id)
            if answer is None:
                continue
            one = {sent.pop(command_id): answer}
            replies.append(one)
            if callback is not None:
                callback(one)
        left = deadline - time.monotonic()
        if not sent or left <= 0:
            break
        time.sleep(min(pause, left))
        pause = min(pause * 2, LAST_POLL)
    return replies


def matching(nodes: list[str], pattern: str | None, matcher: str | None) -> list[str]:
    """The ``nodes`` whose name ``pattern`` matches (``matcher``: ``glob``, the default, or
    ``pcre``), as kombu's mailbox matches a broadcast's destination pattern."""
    if pattern is None:
        return nodes
    kind = matcher or "glob"
    if kind not in MATCHERS:
        raise ConfigurationError(f"matcher must be one of {', '.join(MATCHERS)}, not {matcher!r}")
    if kind == "glob":
        return [n for n in nodes if fnmatch.fnmatchcase(n, pattern)]
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigurationError(f"pattern {pattern!r} is not a regular expression: {exc}") from None
    return [n for n in nodes if compiled.match(n)]


def running_on(admin: Any, ids: list[str]) -> dict[str, list[str]]:
    """``{node: the tasks among ids it runs}``, read before a terminate."""
    running: dict[str, list[str]] = {}
    for task_id in ids:
        task = admin.task(task_id)
        if task is not None and task.status is Status.PENDING and task.executor_id:
            running.setdefault(task.executor_id, []).append(task_id)
    return running


def revoke_replies(
    nodes: list[str], ids: list[str], running: dict[str, list[str]] | None
) -> list[dict[str, Any]]:
    """Each node's reply to a revoke of ``ids``, in Celery's words; to a terminate when
    ``running`` says which of them each node runs."""
    if running is None:
        text = "tasks {" + ", ".join(repr(one) for one in dict.fromkeys(ids)) + "} flagged as revoked"
        return [{node: {"ok": text}} for node in nodes]
    return [
        {node: {"ok": f"terminate: {', '.join(running.get(node, ())) or 'tasks unknown'}"}} for node in nodes
    ]


def answered(
    replies: list[dict[str, Any]] | None, limit: int | None, callback: Callable[[dict[str, Any]], Any] | None
) -> list[dict[str, Any]]:
    """At most ``limit`` of ``replies``, each handed to ``callback`` first, as broadcast() does."""
    kept = list(replies or [])[:limit] if limit is not None else list(replies or [])
    for one in kept:
        if callback is not None:
            callback(one)
    return kept


def listed(value: Any) -> list[Any]:
    """A broadcast argument that may be one value or several, as a list."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
