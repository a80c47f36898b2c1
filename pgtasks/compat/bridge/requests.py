"""A Celery task's ``self.request`` (:class:`~pgtasks.compat.celery.app.task.Context`) made from
what pgtasks knows of the run: the claimed row in a worker, or the call in eager mode."""

from __future__ import annotations

import datetime as dt
import json
import socket
from typing import Any

from pgtasks.compat.bridge.chain_requests import CALLBACK_IDS_KEY, CHAIN_KEY, CHAIN_NEXT_KEY, LINKS_KEY
from pgtasks.compat.bridge.django_results import ARGS_REPR_MAX, given_or
from pgtasks.compat.celery._state import current_request
from pgtasks.compat.celery.app.task import Context
from pgtasks.compat.celery.utils.saferepr import saferepr
from pgtasks.engine.serialization import SERIALIZERS
from pgtasks.sysdb.records import TaskRecord


def iso_time(epoch_ms: int | None) -> str | None:
    """A row's time (milliseconds since the epoch) as Celery shows times: ISO 8601, UTC."""
    if epoch_ms is None:
        return None
    return dt.datetime.fromtimestamp(epoch_ms / 1000, dt.timezone.utc).isoformat()


def stored_meta(record: TaskRecord) -> dict[str, Any]:
    """What the sender stored with the task beside its arguments (bridge/planning.py)."""
    return _meta(record.meta)


def _meta(text: str | None) -> dict[str, Any]:
    try:
        meta = SERIALIZERS["json"].loads(text) if text else {}  # typed JSON (planning.py)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def delivery_info(record: TaskRecord) -> dict[str, Any]:
    """Celery's ``delivery_info`` of a task row: its queue as the routing key, its priority, and
    whether it was delivered before (``redelivered``): claimed by a worker that was lost, or
    sent back by ``Reject(requeue=True)``."""
    return {
        "exchange": "",
        "routing_key": record.queue_name,
        "priority": record.priority,
        "redelivered": record.recovery_attempts > 1 or _requeued(record),
    }


def _requeued(record: TaskRecord) -> bool:
    """The task runs again after ``Reject(requeue=True)``: the Reject is its retry's reason,
    stored as its error until it ends (read only for a task retried with an error)."""
    if not record.retries or not record.error:
        return False
    try:
        stored = json.loads(record.error)
    except ValueError:
        return False
    return isinstance(stored, dict) and stored.get("type") == "Reject"


def request_from_record(
    record: TaskRecord, executor_id: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Context:
    """The request of a task claimed by a worker, from its row (``meta`` holds what Celery
    sends in message headers: ``root_id``, the caller's ``headers``, the canvas' ``stamps``,
    and the message properties given). As in Celery's worker, each custom header and each
    stamp is also an attribute of the request (``self.request.periodic_task_name``), never
    hiding one of the protocol's, and ``headers`` is None when there are none."""
    meta = _meta(record.meta)
    headers = dict(meta.get("headers") or {})
    stamps = dict(meta.get("stamps") or {})
    request = Context(
        id=record.task_id,
        task=record.name,
        args=tuple(args),
        kwargs=dict(kwargs),
        retries=record.retries,
        is_eager=False,
        called_directly=False,
        hostname=executor_id,
        eta=iso_time(record.delay_until_epoch_ms) if record.retries == 0 else None,
        expires=iso_time(record.expires_at_epoch_ms),
        # a retry is sent by the task itself (Celery's self.retry): the task is its parent;
        # a requeued or recovered one is the same message, its parent kept
        parent_id=record.task_id if record.retries and not _requeued(record) else record.parent_task_id,
        root_id=meta.get("root_id") or record.parent_task_id or record.task_id,
        group=meta.get("group_id"),
        group_index=meta.get("group_index"),
        chord=meta.get("chord"),
        stamps=stamps,
        stamped_headers=list(stamps),
        headers=headers or None,
        errbacks=meta.get("errbacks") or None,
        chain=meta.get(CHAIN_KEY),  # the chain's next steps, as Celery's message carries them
        pgtasks_chain_next=meta.get(CHAIN_NEXT_KEY),
        callbacks=(meta.get(LINKS_KEY) or {}).get("callbacks"),
        pgtasks_callback_ids=meta.get(CALLBACK_IDS_KEY),
        time_limit=meta.get("time_limit"),
        soft_time_limit=meta.get("soft_time_limit"),
        # as Celery's message: what apply_async(argsrepr=) gave, else the arguments' repr
        argsrepr=given_or(meta.get("argsrepr"), lambda: saferepr(tuple(args), ARGS_REPR_MAX)),
        kwargsrepr=given_or(meta.get("kwargsrepr"), lambda: saferepr(dict(kwargs), ARGS_REPR_MAX)),
        shadow=meta.get("shadow"),
        delivery_info=delivery_info(record),
        origin=meta.get("origin"),
        correlation_id=record.task_id,
        properties={
            "correlation_id": record.task_id,
            "reply_to": None,
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": record.queue_name},
            "priority": record.priority,
            **dict(meta.get("properties") or {}),
        },
    )
    for name, value in {**stamps, **headers}.items():
        if isinstance(name, str) and name.isidentifier() and not hasattr(request, name):
            setattr(request, name, value)
    return request


def eager_request(
    task_id: str,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    retries: int,
    options: dict[str, Any],
) -> Context:
    """The request of a task run in this process by ``apply()`` / eager mode."""
    parent = current_request()
    return Context(
        id=task_id,
        task=name,
        args=tuple(args),
        kwargs=dict(kwargs),
        retries=retries,
        is_eager=True,
        called_directly=False,
        hostname=socket.gethostname(),
        parent_id=parent.id if parent is not None else None,
        root_id=(parent.root_id or parent.id) if parent is not None else task_id,
        headers=dict(options.get("headers") or {}),
        delivery_info={
            "is_eager": True,
            "exchange": None,
            "routing_key": options.get("queue"),
            "priority": options.get("priority"),
        },
    )
