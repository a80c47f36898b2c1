"""Preparing a task to send the Celery way: Celery's ``apply_async`` options consumed or mapped
onto pgtasks' :class:`~pgtasks.engine.options.SendOptions`, routing, the message headers,
and the publish signals around the insert.

An option neither pgtasks nor Celery knows is, as in Celery, a message property: stored with
the task and shown to it in ``self.request.properties`` (django-celery-beat's
``periodic_task_name=``, celery-once's ``once=``). Only a likely typo of an option pgtasks
acts on is refused (:func:`message_properties`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import functools
import json
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.chain_requests import note_chain_handed_off
from pgtasks.compat.bridge.django_results import given_or
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.message_options import check_message_options
from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.amqp import declared_queues
from pgtasks.compat.celery.app.routes import route
from pgtasks.compat.celery.canvas.stamping import stamps_of
from pgtasks.compat.celery.exceptions import QueueNotFound
from pgtasks.compat.celery.utils.nodenames import anon_nodename
from pgtasks.engine.context import running_context
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.ids import new_task_id
from pgtasks.engine.options import SEND_OPTION_NAMES, EnqueueRequest, SendOptions
from pgtasks.scheduler.zones import load_zone

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

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
        "rate_limit",
        "chord",
        "chain",
    }
)
# Celery's apply_async options that shape the message (or are not carried out yet): consumed
# here, never passed on to SendOptions.
CELERY_OPTIONS = (
    BROKER_OPTIONS
    | PHASE_TWO_OPTIONS
    | {
        "headers",
        "group_id",
        "group_index",
        "root_id",
        "parent_id",
        "time_limit",
        "soft_time_limit",
        "argsrepr",
        "kwargsrepr",
        "origin",
    }
)
# Every option with a meaning here (the rest are message properties), and those pgtasks acts
# on, whose near misses are refused as typos.
KNOWN_OPTIONS = CELERY_OPTIONS | set(SEND_OPTION_NAMES) | {"task", "link", "link_error"}
ACTED_ON = frozenset(SEND_OPTION_NAMES) | {"headers", "link", "link_error", "time_limit", "soft_time_limit"}
_warned: set[str] = set()


def message_properties(options: dict[str, Any]) -> dict[str, Any]:
    """The options of ``apply_async`` that are neither pgtasks' nor Celery's: message
    properties, passed through as Celery passes them. ConfigurationError for a name of 4 or
    more letters close to an option pgtasks acts on (``countdwon``, ``expire``), and for a
    value that is not JSON (it is stored with the task)."""
    extra = {k: v for k, v in options.items() if k not in KNOWN_OPTIONS}
    for name, value in sorted(extra.items()):
        close = difflib.get_close_matches(name, sorted(ACTED_ON), n=1, cutoff=0.85) if len(name) >= 4 else []
        if close:
            raise ConfigurationError(
                f"unknown send option {name!r}: did you mean {close[0]!r}? (an option pgtasks does not "
                "know is passed through as a message property, unless it looks like a typo of one)"
            )
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise ConfigurationError(
                f"send option {name!r} is passed through as a message property and must be JSON, "
                f"not {type(value).__name__}"
            ) from None
    return extra


def check_argument_types(name: str, args: Any, kwargs: Any) -> None:
    """TypeError, as Celery's, naming the task, unless ``args`` is a list or tuple and
    ``kwargs`` a dict with string keys (each may be None)."""
    if args is not None and not isinstance(args, (list, tuple)):
        raise TypeError(f"args of task {name!r} must be a list or tuple, not {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs of task {name!r} must be a dict, not {type(kwargs).__name__}")
    for key in kwargs or ():
        if not isinstance(key, str):
            raise TypeError(
                f"keyword argument names of task {name!r} must be str, not {type(key).__name__} ({key!r})"
            )


def _iso_time(key: str, text: str) -> dt.datetime:
    """The ``eta``/``expires`` string ``text`` as a datetime, or ConfigurationError naming it."""
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise ConfigurationError(f"{key} must be a datetime or an ISO 8601 string, not {text!r}") from None


def _check_limit(key: str, value: Any) -> None:
    """A ``time_limit``/``soft_time_limit`` given to a send: a positive number of seconds (the
    worker enforces it; refused here, where the sender sees why)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ConfigurationError(f"{key} must be a positive number of seconds, not {value!r}")


def _aware(value: dt.datetime, app: Celery) -> dt.datetime:
    """Naive datetimes are UTC when ``enable_utc`` (Celery's default), else app-local time."""
    if value.tzinfo is not None:
        return value
    if flag("enable_utc", app.conf.enable_utc) or not app.conf.timezone:
        return value.replace(tzinfo=dt.timezone.utc)
    return value.replace(tzinfo=load_zone(str(app.conf.timezone)))


@dataclass(frozen=True, slots=True)
class Prepared:
    """One routed task, ready to insert: the engine request and what the publish signals get."""

    request: EnqueueRequest
    headers: dict[str, Any]
    body: tuple[Any, ...]
    properties: dict[str, Any]
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # message properties given
    stamps: dict[str, Any] = dataclasses.field(default_factory=dict)  # canvas stamping

    def publish(self, after: bool) -> None:
        """Send ``before_task_publish`` (or, ``after``, ``after_task_publish``)."""
        name, queue = self.request.name, self.request.options.queue
        if after:
            signals.after_task_publish.send(
                sender=name, body=self.body, exchange="", routing_key=queue, headers=self.headers
            )
            return
        signals.before_task_publish.send(
            sender=name,
            body=self.body,
            exchange="",
            routing_key=queue,
            headers=self.headers,
            properties=self.properties,
            declare=[],
            retry_policy=None,
        )


def this_process_origin() -> str:
    """Celery's ``origin`` of a task sent by this process: ``gen<pid>@<hostname>`` (a worker's
    process too: Celery never puts the worker's node name there)."""
    return _origin_of(os.getpid())


@functools.lru_cache(maxsize=8)
def _origin_of(pid: int) -> str:
    return anon_nodename()


@functools.lru_cache(maxsize=8)
def origin_meta(origin: str) -> str:
    """The task's stored meta when it has nothing but its origin (request.origin)."""
    return json.dumps({"origin": origin}, separators=(",", ":"))


def _repr_of(value: Any) -> str:
    """``repr(value)``; for arguments nested too deeply to show, a placeholder: encoding
    them then fails with the error that names the argument (send_errors.py)."""
    try:
        return repr(value)
    except RecursionError:
        return "<nested too deeply to show>"


def _shown(value: Any) -> str | None:
    """An ``argsrepr``/``kwargsrepr`` given to ``apply_async``, as text."""
    return None if value is None else str(value)


def _not_before_now(seconds: Any) -> Any:
    """A ``countdown`` or ``expires`` below 0 seconds (one computed as ``deadline - now`` once
    the deadline passed) means now, as in Celery: the task runs at once, or is expired and
    never runs. Anything else is left to the checks."""
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds < 0:
        return 0
    return seconds


def prepare(
    app: Celery,
    name: str,
    args: Any = None,
    kwargs: Any = None,
    *,
    task: Any = None,
    task_id: str | None = None,
    **options: Any,
) -> Prepared:
    """Check Celery's ``apply_async`` options, route the task and build its request."""
    check_argument_types(name, args, kwargs)
    check_message_options(options, app.engine.codec.serializer, app.engine.codec.accept, task)
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    if options.get("chain"):  # Celery's forwarding idiom: the rest of the running chain given on
        note_chain_handed_off()
    for key in sorted(set(options) & PHASE_TWO_OPTIONS):
        if options.get(key) is not None and key not in _warned:
            _warned.add(key)
            log.warning("apply_async(%s=...) is not supported by pgtasks.compat yet; ignored", key)
    stamps = stamps_of(options)  # Celery sends them as headers, never as properties
    extra = message_properties(options)
    for key in extra:
        del options[key]
    celery_only = {k: options.pop(k) for k in set(options) & CELERY_OPTIONS}
    known = SendOptions.from_kwargs(**options)  # refuses an unknown option, naming the known ones
    options.update(celery_only)
    routing = {k: v for k, v in options.items() if k not in ("conn", "on_duplicate")}
    routed = route(app.routers, name, args, kwargs, routing, app.conf.task_default_queue, task)
    queue = routed["queue"]
    check_declared(app, queue)
    priority = routed.get("priority")
    if priority is None:
        priority = inherited_priority(app)
    if priority is None:
        priority = app.conf.task_default_priority
    countdown, eta = _not_before_now(routed.get("countdown")), routed.get("eta")
    if isinstance(eta, str):
        eta = _iso_time("eta", eta)
    if countdown is not None:
        eta = None  # Celery: a countdown wins over an eta
    elif eta is not None:
        if not isinstance(eta, dt.datetime):
            raise ConfigurationError(f"eta must be a datetime, not {type(eta).__name__}")
        eta = _aware(eta, app)
    expires = _not_before_now(routed.get("expires"))
    if isinstance(expires, dt.timedelta):
        expires = expires.total_seconds()
    elif isinstance(expires, str):
        expires = _iso_time("expires", expires)
    for key in ("time_limit", "soft_time_limit"):
        _check_limit(key, options.get(key))
    if isinstance(expires, dt.datetime):
        expires = _aware(expires, app)
    task_id = task_id or new_task_id()
    origin = str(options.get("origin") or this_process_origin())
    headers = {
        "lang": "py",
        "task": name,
        "id": task_id,
        "shadow": options.get("shadow") or None,
        "eta": eta.isoformat() if isinstance(eta, dt.datetime) else None,
        "expires": expires.isoformat() if isinstance(expires, dt.datetime) else expires,
        "group": options.get("group_id"),
        "group_index": options.get("group_index"),
        "retries": known.retries,
        "timelimit": [options.get("time_limit"), options.get("soft_time_limit")],
        "root_id": options.get("root_id") or task_id,
        "parent_id": options.get("parent_id"),
        "argsrepr": given_or(_shown(options.get("argsrepr")), lambda: _repr_of(args)),
        "kwargsrepr": given_or(_shown(options.get("kwargsrepr")), lambda: _repr_of(kwargs)),
        "origin": origin,
        "ignore_result": bool(options.get("ignore_result", False)),
        "stamped_headers": list(stamps) or None,
        "stamps": stamps,
        **dict(options.get("headers") or {}),
    }
    sent_with = dataclasses.replace(
        known,
        task_id=task_id,
        queue=queue,
        countdown=countdown,
        eta=eta,
        priority=0 if priority is None else priority,
        expires=expires,
    )
    request = EnqueueRequest(name, args, kwargs, sent_with, None, origin_meta(origin))
    body = (args, kwargs, {"callbacks": None, "errbacks": None, "chain": None, "chord": None})
    properties = {"correlation_id": task_id, "priority": priority, **extra}
    return Prepared(request, headers, body, properties, extra, stamps)


def inherited_priority(app: Celery) -> int | None:
    """With ``task_inherit_parent_priority``, the priority of the task running on this thread,
    which a task it sends takes when neither the call, the task nor a route gives one (as
    Celery's ``send_task`` takes the parent's); else None."""
    if not flag("task_inherit_parent_priority", app.conf.task_inherit_parent_priority):
        return None
    running = running_context()
    return None if running is None else running.record.priority


def check_declared(app: Celery, queue: str) -> None:
    """With ``task_create_missing_queues=False``, a queue outside ``task_queues`` (and not the
    default queue) is refused, as Celery's router refuses it."""
    if app.conf.task_create_missing_queues is not False:
        return
    declared = {getattr(q, "name", q) for q in declared_queues(app.conf.task_queues)}
    if queue not in declared and queue != app.conf.task_default_queue:
        raise QueueNotFound(f"Queue {queue!r} missing from task_queues")
