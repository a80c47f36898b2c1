"""``self.request``: the context of the task being executed, as Celery describes it, and the
stack of tasks running on this thread (``current_task``)."""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pgtasks.sysdb.records import TaskRecord


class Context:
    """Celery's task request: every attribute Celery documents, None or empty by default."""

    id: str | None = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    retries: int = 0
    is_eager: bool = False
    called_directly: bool = True
    hostname: str | None = None
    eta: str | None = None
    expires: str | None = None
    root_id: str | None = None
    parent_id: str | None = None
    group: str | None = None
    group_index: int | None = None
    chord: Any = None
    chain: Any = None
    callbacks: Any = None
    errbacks: Any = None
    headers: dict[str, Any] | None = None
    delivery_info: dict[str, Any] | None = None
    reply_to: str | None = None
    correlation_id: str | None = None
    origin: str | None = None
    utc: bool = True
    timelimit: tuple[float | None, float | None] | None = None
    time_limit: float | None = None
    soft_time_limit: float | None = None
    ignore_result: bool = False
    task: str | None = None
    shadow: str | None = None
    taskset: str | None = None
    properties: dict[str, Any] | None = None
    stamps: dict[str, Any] | None = None
    stamped_headers: list[str] | None = None
    logfile: str | None = None
    loglevel: int | None = None
    replaced_task_nesting: int = 0
    children: list[Any] = []

    def __init__(self, *args: Any, **fields: Any) -> None:
        """``Context(mapping)`` or ``Context(**fields)``, as Celery's."""
        self.kwargs = {}
        self.children = []
        for mapping in args:
            self.__dict__.update(dict(mapping))
        self.__dict__.update(fields)

    def update(self, *args: Any, **fields: Any) -> None:
        for mapping in args:
            self.__dict__.update(dict(mapping))
        self.__dict__.update(fields)

    def clear(self) -> None:
        """Every field back to its default."""
        self.__dict__.clear()
        self.kwargs = {}
        self.children = []

    def as_execution_options(self) -> dict[str, Any]:
        """The options that send this task again as it was sent (Celery's names)."""
        limit_hard, limit_soft = self.timelimit or (None, None)
        return {
            "task_id": self.id,
            "root_id": self.root_id,
            "parent_id": self.parent_id,
            "group_id": self.group,
            "group_index": self.group_index,
            "shadow": self.shadow,
            "chord": self.chord,
            "chain": self.chain,
            "link": self.callbacks,
            "link_error": self.errbacks,
            "expires": self.expires,
            "soft_time_limit": limit_soft,
            "time_limit": limit_hard,
            "headers": self.headers,
            "retries": self.retries,
            "reply_to": self.reply_to,
            "replaced_task_nesting": self.replaced_task_nesting,
            "origin": self.origin,
        }

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def as_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k) for k in dir(self) if not k.startswith("_") and not callable(getattr(self, k))
        }

    def __repr__(self) -> str:
        return f"<Context: {self.as_dict()!r}>"


def _iso(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return dt.datetime.fromtimestamp(epoch_ms / 1000, dt.timezone.utc).isoformat()


def _meta(text: str | None) -> dict[str, Any]:
    try:
        meta = json.loads(text) if text else {}
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def request_from_record(
    record: TaskRecord, executor_id: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Context:
    """The request of a task claimed by a worker, from its row (``meta`` holds what Celery
    sends in message headers: ``root_id`` and the caller's ``headers``)."""
    meta = _meta(record.meta)
    return Context(
        id=record.task_id,
        task=record.name,
        args=tuple(args),
        kwargs=dict(kwargs),
        retries=record.retries,
        is_eager=False,
        called_directly=False,
        hostname=executor_id,
        eta=_iso(record.delay_until_epoch_ms) if record.retries == 0 else None,
        expires=_iso(record.expires_at_epoch_ms),
        parent_id=record.parent_task_id,
        root_id=meta.get("root_id") or record.parent_task_id or record.task_id,
        headers=dict(meta.get("headers") or {}),
        errbacks=meta.get("errbacks") or None,
        time_limit=meta.get("time_limit"),
        soft_time_limit=meta.get("soft_time_limit"),
        delivery_info={
            "exchange": "",
            "routing_key": record.queue_name,
            "priority": record.priority,
            "redelivered": record.recovery_attempts > 1,
        },
        origin=None,
    )


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


_stack: contextvars.ContextVar[tuple[tuple[Any, Context], ...]] = contextvars.ContextVar(
    "pgtasks_compat_requests", default=()
)


@contextmanager
def executing(task: Any, request: Context) -> Iterator[Context]:
    """Make ``request`` the request of ``task`` (and the current task) while inside."""
    token = _stack.set((*_stack.get(), (task, request)))
    try:
        yield request
    finally:
        _stack.reset(token)


def push_request(task: Any, request: Context) -> None:
    """Make ``request`` the request of ``task`` until :func:`pop_request` (Celery's
    ``task.push_request()``, used by unit tests of bound tasks)."""
    _stack.set((*_stack.get(), (task, request)))


def pop_request(task: Any) -> Context | None:
    """Remove and return the innermost request pushed for ``task`` (None if there is none)."""
    stack = list(_stack.get())
    for index in range(len(stack) - 1, -1, -1):
        if stack[index][0] is task:
            request = stack.pop(index)[1]
            _stack.set(tuple(stack))
            return request
    return None


def requests_of(task: Any) -> list[Context]:
    """The requests of ``task`` on this thread, outermost first."""
    return [request for owner, request in _stack.get() if owner is task]


def request_of(task: Any) -> Context | None:
    """The innermost request of ``task`` on this thread, or None."""
    for owner, request in _stack.get()[::-1]:  # not reversed(): mypy types that as Any
        if owner is task:
            return request
    return None


def current_task_object() -> Any:
    """The task executing on this thread (Celery's ``current_task``), or None."""
    stack = _stack.get()
    return stack[-1][0] if stack else None


def current_request() -> Context | None:
    stack = _stack.get()
    return stack[-1][1] if stack else None


_join_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar("pgtasks_join_allowed", default=False)


def inside_worker_task() -> bool:
    """True while a task executed by a worker (not eagerly or directly) runs on this thread,
    outside an ``allow_join_result()`` block."""
    if _join_allowed.get():
        return False
    return any(not r.is_eager and not r.called_directly for _, r in _stack.get())


@contextmanager
def allow_join_result() -> Iterator[None]:
    """Celery's ``allow_join_result()``: inside it, a task may wait for another's result."""
    token = _join_allowed.set(True)
    try:
        yield
    finally:
        _join_allowed.reset(token)


@contextmanager
def denied_join_result() -> Iterator[None]:
    """Celery's ``denied_join_result()``: the default again inside an allowed block."""
    token = _join_allowed.set(False)
    try:
        yield
    finally:
        _join_allowed.reset(token)
