"""Celery's ``celery._state``: which app is current, the apps created, and the tasks running on
this thread (``current_app``, ``current_task``, each task's ``request``).

The Celery app (``app/base.py``) fills the registry: each new app registers itself, and
registers once how to make the default app used when none was created (Celery's
``current_app`` is never empty). Everything below the app looks the current app up here.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.local import Proxy

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.app.task import Context

__all__ = [
    "RequestStack",
    "active_apps",
    "app_or_default",
    "current_app",
    "current_task",
    "get_current_app",
    "get_current_task",
    "set_current_app",
    "set_default_app",
    "task_join_will_block",
]

# -- apps --------------------------------------------------------------------------------------
_lock = threading.Lock()
_apps: list[weakref.ref[Celery]] = []
_current: list[Celery] = []  # the current app (at most one): Celery's "current_app"
_default: list[Any] = []  # the app set by set_default_app (at most one), a Trap in tests
_make_default: list[Callable[[], Celery]] = []  # set once by app/base.py


def register_app(app: Celery, set_as_current: bool) -> None:
    """Remember ``app`` (weakly); make it current if asked or if none is."""
    with _lock:
        _apps.append(weakref.ref(app))
        if set_as_current or not _current:
            _current[:] = [app]


def set_current_app(app: Celery | None) -> None:
    """Make ``app`` the current app (None: no app is current)."""
    with _lock:
        _current[:] = [] if app is None else [app]


def current_app_or_none() -> Celery | None:
    """The current app, or None if no app was created yet."""
    with _lock:
        return _current[0] if _current else None


def set_default_app(app: Any) -> None:
    """Celery's ``set_default_app``: what ``current_app`` gives while no app is current (None
    forgets it). Celery's test suites set a ``Trap`` here, which fails any use of it."""
    with _lock:
        _default[:] = [] if app is None else [app]


def get_current_app() -> Celery:
    """The current app: the last one created (or set current); else the app given to
    :func:`set_default_app`; else a default app, made once."""
    found = current_app_or_none()
    if found is not None:
        return found
    with _lock:
        if _default:
            return _default[0]  # type: ignore[no-any-return]
        make = _make_default[0] if _make_default else None
    if make is None:
        raise RuntimeError("pgtasks.compat.celery.app.base was not imported: no Celery app can be made")
    return make()


def app_or_default(app: Celery | None = None) -> Celery:
    """``app``, or the current app when it is None."""
    return app if app is not None else get_current_app()


def active_apps() -> list[Celery]:
    """Every app created and still referenced."""
    with _lock:
        return [app for ref in _apps if (app := ref()) is not None]


def set_default_factory(make: Callable[[], Celery]) -> None:
    """How :func:`get_current_app` makes an app when none was created (set once by app/base.py)."""
    with _lock:
        _make_default[:] = [make]


current_app = Proxy(get_current_app)

# -- the tasks running on this thread -----------------------------------------------------------
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


def get_current_task() -> Any:
    """The task executing on this thread (Celery's ``current_task``), or None."""
    stack = _stack.get()
    return stack[-1][0] if stack else None


def get_current_worker_task() -> Any:
    """The innermost task on this thread that a worker runs (not one called directly)."""
    for task, request in _stack.get()[::-1]:
        if not getattr(request, "called_directly", True):
            return task
    return None


def current_request() -> Context | None:
    """The request of the task executing on this thread, or None."""
    stack = _stack.get()
    return stack[-1][1] if stack else None


current_task = Proxy(get_current_task)


class RequestStack:
    """Celery's ``task.request_stack``: the requests pushed for one task on this thread."""

    def __init__(self, task: Any) -> None:
        self._task = task

    def push(self, request: Context) -> None:
        push_request(self._task, request)

    def pop(self) -> Context | None:
        return pop_request(self._task)

    @property
    def top(self) -> Context | None:
        found = requests_of(self._task)
        return found[-1] if found else None

    @property
    def stack(self) -> list[Context]:
        return requests_of(self._task)

    def __len__(self) -> int:
        return len(self.stack)


# -- waiting for results inside a task -------------------------------------------------------
# Set by allow_join_result (True) and denied_join_result (False) for their block; None outside.
_join_allowed: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "pgtasks_join_allowed", default=None
)


def task_join_will_block() -> bool:
    """Whether ``result.get()`` is refused here, as in Celery: inside a
    ``denied_join_result()`` block (Celery runs an eager ``apply_async`` in one), and while a
    task executed by a worker runs on this thread, outside an ``allow_join_result()`` block.
    A task run by ``apply()`` (or called directly) may wait, as in Celery."""
    allowed = _join_allowed.get()
    if allowed is not None:
        return not allowed
    return any(not r.is_eager and not r.called_directly for _, r in _stack.get())


@contextmanager
def joins_allowed(allowed: bool) -> Iterator[None]:
    """Inside the block, waiting for a result in a task is allowed (or not) whatever the
    enclosing block said (``celery.result.allow_join_result``/``denied_join_result``)."""
    token = _join_allowed.set(allowed)
    try:
        yield
    finally:
        _join_allowed.reset(token)
