"""Moving a Celery deployment's waiting messages from its Redis broker into pgtasks
(``pgtasks import-celery``): each message of Celery's protocol (v2, or v1, in JSON) becomes the
pgtasks task it describes (same id, name, arguments, ETA, expiry, queue, priority, callbacks
and errbacks), and is removed from Redis only once that task is committed. Re-running sends
nothing twice: a task id pgtasks has already is not sent again (its message is removed).

What is read: the queues' lists (kombu keeps one per queue, plus one per priority step), and
with ``unacked`` the messages that stopped Celery workers had reserved (ETA tasks wait there)
and did not give back. Left in Redis, with the reason: messages that are not JSON, and steps
of a chain or chord (their workflow lives in the message; drain those with a Celery worker).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgtasks.cli.celery_import.redis_wire import RedisConnection

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

PRIORITY_SEPARATOR = "\x06\x16"  # kombu's Redis transport: "<queue>\x06\x16<priority>"
UNACKED, UNACKED_INDEX = "unacked", "unacked_index"


class Unreadable(Exception):
    """A message that is not imported; the text says why."""


@dataclass
class Waiting:
    """One message: where it is in Redis, and the task it describes."""

    key: str  # the list it is in, or "unacked"
    raw: bytes  # the list item (for LREM), or the hash field (the delivery tag)
    task_id: str
    name: str
    args: list[Any]
    kwargs: dict[str, Any]
    options: dict[str, Any]


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)
    existed: list[str] = field(default_factory=list)  # pgtasks had them: not sent again
    left: list[tuple[str, str]] = field(default_factory=list)  # (message id or key, why)
    removed: int = 0


def import_from_redis(
    app: Celery, broker_url: str, queues: list[str], unacked: bool = False, dry_run: bool = False
) -> ImportReport:
    """Import the waiting messages of ``queues`` (and the reserved ones with ``unacked``)."""
    redis = RedisConnection(broker_url)
    report = ImportReport()
    try:
        for message in _messages(redis, queues, unacked, report):
            if app.engine.get_task(message.task_id) is not None:
                report.existed.append(message.task_id)
            elif dry_run:
                report.imported.append(message.task_id)
                continue
            else:
                app.send_task(
                    message.name, message.args, message.kwargs, task_id=message.task_id, **message.options
                )
                report.imported.append(message.task_id)
            if not dry_run:  # committed (or there already): only now does the broker lose it
                report.removed += _remove(redis, message)
    finally:
        redis.close()
    return report


def _messages(
    redis: RedisConnection, queues: list[str], unacked: bool, report: ImportReport
) -> Iterator[Waiting]:
    for queue in queues:
        for key in [queue, *(f"{queue}{PRIORITY_SEPARATOR}{p}" for p in range(1, 10))]:
            # Producers LPUSH and consumers BRPOP: the oldest message is last.
            for raw in reversed(redis.call("LRANGE", key, 0, -1) or []):
                yield from _decoded(key, raw, raw, queue, report)
    if unacked:
        entries = redis.call("HGETALL", UNACKED) or []
        for tag, value in zip(entries[::2], entries[1::2], strict=True):
            try:
                payload, _exchange, routing_key = json.loads(value)
                raw = json.dumps(payload).encode()
            except (ValueError, TypeError):
                report.left.append((f"unacked {tag.decode(errors='replace')}", "not a kombu message"))
                continue
            yield from _decoded(UNACKED, tag, raw, routing_key or queues[0], report)


def _decoded(key: str, handle: bytes, raw: bytes, queue: str, report: ImportReport) -> Iterator[Waiting]:
    try:
        yield decode_message(key, handle, raw, queue)
    except Unreadable as exc:
        report.left.append((_message_id(raw) or key, str(exc)))


def decode_message(key: str, handle: bytes, raw: bytes, queue: str) -> Waiting:
    """The task a kombu message of Celery's protocol describes (Unreadable says why not)."""
    try:
        envelope = json.loads(raw)
        headers = envelope.get("headers") or {}
        properties = envelope.get("properties") or {}
    except (ValueError, AttributeError):
        raise Unreadable("not a kombu message (JSON with headers and properties)") from None
    if envelope.get("content-type") != "application/json":
        raise Unreadable(f"its body is {envelope.get('content-type')!r}: only JSON messages are imported")
    body = envelope.get("body") or ""
    if properties.get("body_encoding") == "base64":
        body = base64.b64decode(body)
    try:
        decoded = json.loads(body)
    except ValueError:
        raise Unreadable("its body is not JSON") from None
    if "task" in headers:  # protocol 2: [args, kwargs, embed]
        args, kwargs, embed = decoded
        fields = headers
    else:  # protocol 1: everything in the body
        args, kwargs, embed, fields = decoded.get("args"), decoded.get("kwargs"), decoded, decoded
    if embed.get("chain") or embed.get("chord"):
        raise Unreadable("a step of a chain or chord: drain it with a Celery worker")
    options: dict[str, Any] = {"queue": queue, "retries": int(fields.get("retries") or 0)}
    for name in ("eta", "expires"):
        when = fields.get(name)
        if when:
            options[name] = _when(when)
    if properties.get("priority") is not None:
        options["priority"] = properties["priority"]
    for mine, theirs in (("link", "callbacks"), ("link_error", "errbacks")):
        if embed.get(theirs):
            options[mine] = list(embed[theirs])
    return Waiting(
        key, handle, str(fields["id"]), str(fields["task"]), list(args or ()), dict(kwargs or {}), options
    )


def _when(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _message_id(raw: bytes) -> str | None:
    try:
        found = json.loads(raw).get("headers", {}).get("id")
    except (ValueError, AttributeError):
        return None
    return str(found) if found else None


def _remove(redis: RedisConnection, message: Waiting) -> int:
    if message.key == UNACKED:
        redis.call("ZREM", UNACKED_INDEX, message.raw)
        return int(redis.call("HDEL", UNACKED, message.raw))
    return int(redis.call("LREM", message.key, 1, message.raw))
