"""Sending a task the Celery way: routing, Celery's ``apply_async`` options, the publish
signals, one INSERT through the engine."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from typing import TYPE_CHECKING, Any

from pgtasks.compat import signals
from pgtasks.compat.routing import route
from pgtasks.engine.errors import ConfigurationError
from pgtasks.scheduler.zones import load_zone
from pgtasks.sending import send_by_name

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery
    from pgtasks.compat.result import AsyncResult

log = logging.getLogger("pgtasks.compat")

# apply_async options that only mean something to a message broker: accepted, no effect.
BROKER_OPTIONS = frozenset(
    {
        "exchange",
        "exchange_type",
        "routing_key",
        "delivery_mode",
        "compression",
        "serializer",
        "retry",
        "retry_policy",
        "producer",
        "connection",
        "router",
        "mandatory",
        "immediate",
        "reply_to",
        "correlation_id",
        "add_to_parent",
        "shadow",
        "declare",
        "publisher",
        "result_cls",
        "task_type",
        "stamped_headers",
        "stamps",
        "ignore_result",
        "acks_late",
    }
)
# apply_async options pgtasks does not carry out yet (warned once, then ignored).
PHASE_TWO_OPTIONS = frozenset(
    {
        "time_limit",
        "soft_time_limit",
        "group_id",
        "group_index",
        "chord",
        "root_id",
        "parent_id",
        "chain",
        "rate_limit",
    }
)
_warned: set[str] = set()


def _aware(value: dt.datetime, app: Celery) -> dt.datetime:
    """Naive datetimes are UTC when ``enable_utc`` (Celery's default), else app-local time."""
    if value.tzinfo is not None:
        return value
    if app.conf.enable_utc or not app.conf.timezone:
        return value.replace(tzinfo=dt.timezone.utc)
    return value.replace(tzinfo=load_zone(str(app.conf.timezone)))


def send_task(
    app: Celery,
    name: str,
    args: Any = None,
    kwargs: Any = None,
    *,
    task: Any = None,
    task_id: str | None = None,
    link: Any = None,
    link_error: Any = None,
    **options: Any,
) -> AsyncResult:
    """Route and insert one task; return its AsyncResult."""
    if link is not None or link_error is not None:
        raise NotImplementedError(
            f"apply_async(link=..., link_error=...) for {name!r}: callbacks are not supported by "
            "pgtasks.compat yet (planned: recorded in the same transaction as the outcome)"
        )
    if args is not None and not isinstance(args, (list, tuple)):
        raise TypeError(f"args of task {name!r} must be a list or tuple, not {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs of task {name!r} must be a dict, not {type(kwargs).__name__}")
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    for key in sorted(set(options) & PHASE_TWO_OPTIONS):
        if options.get(key) is not None and key not in _warned:
            _warned.add(key)
            log.warning("apply_async(%s=...) is not supported by pgtasks.compat yet; ignored", key)
    unknown = (
        set(options)
        - BROKER_OPTIONS
        - PHASE_TWO_OPTIONS
        - {
            "countdown",
            "eta",
            "expires",
            "queue",
            "priority",
            "headers",
            "deduplication_id",
            "partition_key",
            "conn",
            "on_duplicate",
        }
    )
    if unknown:
        raise TypeError(f"apply_async() got unexpected options {sorted(unknown)}")
    routed = route(app.routers, name, args, kwargs, options, app.conf.task_default_queue, task)
    queue = routed["queue"]
    priority = routed.get("priority", app.conf.task_default_priority)
    countdown, eta = routed.get("countdown"), routed.get("eta")
    if isinstance(eta, str):
        eta = dt.datetime.fromisoformat(eta)
    if countdown is not None:
        eta = None  # Celery: a countdown wins over an eta
    elif eta is not None:
        if not isinstance(eta, dt.datetime):
            raise ConfigurationError(f"eta must be a datetime, not {type(eta).__name__}")
        eta = _aware(eta, app)
    expires = routed.get("expires")
    if isinstance(expires, dt.timedelta):
        expires = expires.total_seconds()
    elif isinstance(expires, str):
        expires = dt.datetime.fromisoformat(expires)
    if isinstance(expires, dt.datetime):
        expires = _aware(expires, app)
    task_id = task_id or str(uuid.uuid4())
    headers = {
        "lang": "py",
        "task": name,
        "id": task_id,
        "shadow": None,
        "eta": eta.isoformat() if isinstance(eta, dt.datetime) else None,
        "expires": expires.isoformat() if isinstance(expires, dt.datetime) else expires,
        "group": None,
        "group_index": None,
        "retries": 0,
        "timelimit": [None, None],
        "root_id": task_id,
        "parent_id": None,
        "argsrepr": repr(args),
        "kwargsrepr": repr(kwargs),
        "origin": None,
        "ignore_result": bool(options.get("ignore_result", False)),
        **dict(options.get("headers") or {}),
    }
    body = (args, kwargs, {"callbacks": None, "errbacks": None, "chain": None, "chord": None})
    properties = {"correlation_id": task_id, "priority": priority}
    signals.before_task_publish.send(
        sender=name,
        body=body,
        exchange="",
        routing_key=queue,
        headers=headers,
        properties=properties,
        declare=[],
        retry_policy=None,
    )
    sent = send_by_name(
        app.engine,
        name,
        args,
        kwargs,
        task_id=task_id,
        queue=queue,
        countdown=countdown,
        eta=eta,
        priority=0 if priority is None else priority,
        deduplication_id=options.get("deduplication_id"),
        partition_key=options.get("partition_key"),
        expires=expires,
        on_duplicate=options.get("on_duplicate", "raise"),
        conn=options.get("conn"),
    )
    signals.after_task_publish.send(sender=name, body=body, exchange="", routing_key=queue, headers=headers)
    return app.AsyncResult(sent.id, task_name=name)
