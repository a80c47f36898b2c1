"""django-celery-results' rows from pgtasks' tasks: with ``result_backend = "django-db"`` (or
``"django-cache"``, or a ``module:Class`` subclassing Celery's backend base) each task's
states are mirrored into that library's backend, written by its own code (``_store_result``,
``_save_group``, ``apply_chord``), so that ``TaskResult``, ``GroupResult`` and
``ChordCounter`` rows (or its cache keys) hold what Celery would have written there.

pgtasks' tables stay the source of truth: nothing here is ever read back (``AsyncResult``
reads pgtasks). When each state is written:

* STARTED (``track_started``), custom states (``update_state``) and RETRY: by the process
  running the task, as it reaches them (interim states, as Celery writes them);
* SUCCESS, FAILURE and REVOKED: by the worker's mirror thread, once pgtasks has committed the
  outcome, from the committed row (so a row never claims an outcome pgtasks rolled back);
* REVOKED by ``revoke()``: by the revoking process, once pgtasks committed it;
* ``GroupResult.save()`` / ``delete()``: by the caller; a chord's ``ChordCounter`` is created
  when the chord is sent and counted down, then deleted, as its header tasks end.

A write that fails is logged (once per process, then at debug level) and never changes the
task's outcome nor runs it again. Tasks that ignore their result get no row, as on Celery.
Django and django_celery_results are imported only when such a backend is configured.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import queue
import threading
import types
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, cast

from pgtasks.compat.bridge import django_support
from pgtasks.compat.bridge.exception_meta import CELERY_MODULES
from pgtasks.compat.celery import states
from pgtasks.compat.celery.backends.base import BaseBackend
from pgtasks.compat.celery.exceptions import TaskRevokedError
from pgtasks.compat.celery.result.async_result import AsyncResult, _ignored
from pgtasks.compat.celery.utils.saferepr import saferepr
from pgtasks.sysdb.records import Status

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery
    from pgtasks.compat.celery.app.task import Context, Task
    from pgtasks.sysdb.records import TaskRecord

log = logging.getLogger("pgtasks.compat")

# The names django-celery-results registers (entry points of group celery.result_backends).
ALIASES = {
    "django-db": "django_celery_results.backends.database:DatabaseBackend",
    "django-cache": "django_celery_results.backends.cache:CacheBackend",
}
ARGS_REPR_MAX = 1024  # Celery's resultrepr_maxsize for argsrepr/kwargsrepr


def given_or(shown: str | None, default: Callable[[], str]) -> str:
    """An ``argsrepr``/``kwargsrepr`` given (``''`` too: it hides the arguments, as Celery keeps
    it), else ``default()``, the arguments' repr."""
    return default() if shown is None else shown


BATCH = 100  # outcomes written in one commit of the app's database, at most
_FINAL = {Status.SUCCESS: states.SUCCESS, Status.ERROR: states.FAILURE, Status.CANCELLED: states.REVOKED}
_UNSET = object()


def backend_path(name: Any) -> str | None:
    """Where the class of ``result_backend`` lives, or None for Celery's own URLs (``redis://``,
    ``rpc://``, ``db+...``), which pgtasks replaces."""
    if not isinstance(name, str) or not name or "://" in name:
        return None
    if name in ALIASES:
        return ALIASES[name]
    found = entry_points(group="celery.result_backends").select(name=name)
    for point in found:
        return str(point.value)
    return name if ":" in name or "." in name else None


def mirror_of(app: Celery) -> ResultsMirror | None:
    """The app's mirror (built at first use), or None when ``result_backend`` names no class
    to mirror into."""
    mirror = getattr(app, "_results_mirror", _UNSET)
    if mirror is _UNSET:
        mirror = _build(app)
        app._results_mirror = mirror  # type: ignore[attr-defined]
    return mirror  # type: ignore[return-value]


def _build(app: Celery) -> ResultsMirror | None:
    path = backend_path(app.conf.get("result_backend"))
    if path is None:
        return None
    module, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except Exception as exc:
        log.warning("result_backend %r: cannot import %s (%s): task states are not mirrored", path, path, exc)
        return None
    if not (isinstance(cls, type) and issubclass(cls, BaseBackend)):
        log.warning("result_backend %r is not a Celery result backend class: not mirrored", path)
        return None
    return ResultsMirror(app, cls(app=app, url=app.conf.get("result_backend")))


class ResultsMirror:
    """Writes task states into one backend instance (see the module docstring)."""

    def __init__(self, app: Celery, backend: BaseBackend) -> None:
        self.app = app
        self.backend = backend
        self.hostname: str | None = None  # the worker's node name, once a worker serves
        self._outcomes: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failed = False

    # -- the process running a task ------------------------------------------------------
    def started(self, request: Context) -> None:
        """STARTED with Celery's ``{pid, hostname}``."""
        info = {"pid": os.getpid(), "hostname": request.hostname}
        self._write(str(request.id), info, states.STARTED, None, _view(request))

    def custom_state(self, request: Context, task_id: str, state: str, meta: Any) -> None:
        """A state set with ``update_state`` and its meta."""
        self._write(task_id, meta, state, None, _view(request))

    def retrying(self, request: Context, reason: Any, traceback: str | None) -> None:
        """RETRY, with the reason and the traceback of the Retry (named as Celery names it)."""
        tb = traceback
        for ours, theirs in CELERY_MODULES.items():
            tb = tb.replace(f"{ours}.Retry", f"{theirs}.Retry") if tb else tb
        view = _view(request, children=[[[request.id, None], None]])
        self._write(str(request.id), reason, states.RETRY, tb, view)

    # -- the process revoking a task -----------------------------------------------------
    def revoked(self, task_id: str) -> None:
        """REVOKED, once pgtasks committed the revoke, with what Celery's worker knows of a
        task it discards: no name, arguments or worker."""
        self._write(task_id, TaskRevokedError("revoked"), states.REVOKED, None, None)

    # -- the worker, after pgtasks committed outcomes -------------------------------------
    def committed(self, task_ids: list[str]) -> None:
        """Hand ids whose outcome this worker committed to the mirror thread (never blocks)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pgtasks-results-mirror", daemon=True)
                self._thread.start()
        for task_id in task_ids:
            self._outcomes.put(task_id)

    def stop(self, timeout: float = 10.0) -> None:
        """Write what was handed over (for up to ``timeout`` seconds), then end the thread."""
        thread = self._thread
        if thread is not None:
            self._outcomes.put(None)
            thread.join(timeout)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch = [self._outcomes.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._outcomes.get_nowait())
                except queue.Empty:
                    break
            stopping = None in batch
            ids = [task_id for task_id in batch if task_id is not None]
            try:
                with self._one_commit():
                    for task_id in ids:
                        self._guard(task_id, self.outcome, task_id)
            except Exception as exc:  # the commit itself failed: those rows are lost, not more
                self._failure(f"{len(ids)} tasks", exc)
        self._close_connections()

    def _one_commit(self) -> contextlib.AbstractContextManager[Any]:
        """The rows of a batch share one commit in the app's database (each in its own
        savepoint, so that one failing write loses only itself): a worker ending tasks faster
        than one commit each keeps up. Nothing to group for a cache backend."""
        model = getattr(self.backend, "TaskModel", None)
        if model is None:
            return contextlib.nullcontext()
        from django.db import router, transaction

        return cast("contextlib.AbstractContextManager[Any]", transaction.atomic(router.db_for_write(model)))

    def outcome(self, task_id: str) -> None:
        """SUCCESS, FAILURE or REVOKED from the committed row (nothing for a task not ended,
        such as one given back at shutdown)."""
        engine = self.app.engine
        record = engine.get_task(task_id)
        if record is None:
            return
        state = _FINAL.get(record.status, states.FAILURE if record.status.is_terminal else None)
        if state is None or self._ignored(record):
            return
        result = AsyncResult(task_id, app=self.app)
        value = engine.result_of(record) if state == states.SUCCESS else result._value_of(record)
        traceback = result._traceback_of(record) if state == states.FAILURE else None
        self._write(task_id, value, state, traceback, self._view_of(record))
        if state in (states.SUCCESS, states.FAILURE):
            self._count_chord_part(record)

    def _ignored(self, record: TaskRecord) -> bool:
        task = self.app.tasks.get(record.name)
        return _ignored(record) or bool(task is not None and task.ignore_result)

    def _view_of(self, record: TaskRecord) -> types.SimpleNamespace:
        """The request Celery's backend reads, made from a committed row."""
        args, kwargs = self.app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
        meta = _json(record.meta)
        # Celery's children: what the body sent (not a chain's or chord's next task, which
        # pgtasks also notes as sent by the task that released it)
        around = self.app.engine.admin.links_around(record.task_id)
        links = [x for x in around if x.parent_id == record.task_id]
        following = {x.child_id for x in links if x.kind != "sent"}
        sent = [[[x.child_id, None], None] for x in links if x.kind == "sent" and x.child_id not in following]
        return types.SimpleNamespace(
            id=record.task_id,
            task=record.name,
            args=tuple(args),
            kwargs=dict(kwargs),
            argsrepr=given_or(meta.get("argsrepr"), lambda: saferepr(tuple(args), ARGS_REPR_MAX)),
            kwargsrepr=given_or(meta.get("kwargsrepr"), lambda: saferepr(dict(kwargs), ARGS_REPR_MAX)),
            hostname=self.hostname or record.executor_id,
            periodic_task_name=(meta.get("headers") or {}).get("periodic_task_name"),
            retries=record.retries,
            delivery_info={"routing_key": record.queue_name},
            children=sent,
            meta={},
        )

    # -- groups and chords ---------------------------------------------------------------
    def save_group(self, group_id: str, result: Any) -> None:
        self._guard(group_id, self.backend.save_group, group_id, result)

    def cleanup(self) -> None:
        """The library backend's ``cleanup`` (its rows past ``result_expires``), as Celery's
        ``celery.backend_cleanup`` task calls it; a failure is logged."""
        try:
            self.backend.cleanup()
        except Exception as exc:
            log.warning(
                "result_backend %s: could not delete its expired results (%s: %s)",
                type(self.backend).__name__,
                type(exc).__name__,
                str(exc)[:200],
            )

    def delete_group(self, group_id: str) -> None:
        self._guard(group_id, self.backend.delete_group, group_id)

    def chord_sent(self, header: Any, size: int) -> None:
        """The library's ``ChordCounter`` for a chord just sent (its ``apply_chord``)."""
        apply_chord = getattr(self.backend, "apply_chord", None)
        if apply_chord is not None:
            self._guard(header.id, apply_chord, header, {"chord_size": size})

    def _count_chord_part(self, record: TaskRecord) -> None:
        """One header task of a chord ended: count it down as the library's
        ``on_chord_part_return`` does, without sending the body (pgtasks' links start it)."""
        group_id = _json(record.meta).get("chord_group")  # planning.py
        counter = _chord_counter_model(self.backend) if group_id else None
        if counter is None:
            return
        from django.db import router, transaction

        with transaction.atomic(using=router.db_for_write(counter)):
            row = counter.objects.select_for_update().filter(group_id=group_id).first()
            if row is None:
                return
            row.count -= 1
            if row.count > 0:
                row.save(update_fields=["count"])
            else:
                row.delete()

    # -- writing -------------------------------------------------------------------------
    def _write(self, task_id: str, value: Any, state: str, traceback: str | None, request: Any) -> None:
        self._guard(task_id, self.backend.store_result, task_id, value, state, traceback, request)

    def _guard(self, task_id: str, write: Any, *args: Any) -> None:
        try:
            with self._savepoint():
                write(*args)
        except Exception as exc:
            self._failure(task_id, exc)

    def _savepoint(self) -> contextlib.AbstractContextManager[Any]:
        """Inside a batch's transaction (the mirror thread), a savepoint; else nothing."""
        if threading.current_thread() is not self._thread:
            return contextlib.nullcontext()
        return self._one_commit()  # nested in the batch's: a savepoint

    def _failure(self, task_id: str, exc: Exception) -> None:
        level = logging.DEBUG if self._failed else logging.WARNING
        self._failed = True
        log.log(
            level,
            "could not mirror the state of %s into result_backend %s (%s: %s); pgtasks keeps its "
            "state, later states are still mirrored (further failures are logged at debug level)",
            task_id,
            type(self.backend).__name__,
            type(exc).__name__,
            str(exc)[:200],
        )

    def _close_connections(self) -> None:
        django_support.close_old_connections()


def _view(request: Context, children: list[Any] | None = None) -> types.SimpleNamespace:
    """The request Celery's backend reads, from a running task's ``self.request``."""
    args, kwargs = tuple(request.args or ()), dict(request.kwargs or {})
    return types.SimpleNamespace(
        id=request.id,
        task=request.task,
        args=args,
        kwargs=kwargs,
        argsrepr=given_or(request.argsrepr, lambda: saferepr(args, ARGS_REPR_MAX)),
        kwargsrepr=given_or(request.kwargsrepr, lambda: saferepr(kwargs, ARGS_REPR_MAX)),
        hostname=request.hostname,
        periodic_task_name=getattr(request, "periodic_task_name", None),
        retries=request.retries,
        delivery_info=request.delivery_info or {},
        children=children or [],
        meta=getattr(request, "meta", None) or {},
    )


def _json(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _chord_counter_model(backend: BaseBackend) -> Any:
    """django-celery-results' ChordCounter where the backend is its database backend (or a
    subclass of it)."""
    if not hasattr(backend, "apply_chord") or not hasattr(backend, "TaskModel"):
        return None
    return importlib.import_module("django_celery_results.models").ChordCounter


def running_task_mirror(task: Task) -> ResultsMirror | None:
    """The mirror of ``task``'s app, or None (not configured, or the task ignores results)."""
    if task.ignore_result:
        return None
    return mirror_of(task.app)
