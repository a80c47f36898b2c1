"""Celery's ``celery.backends.base``: the result backend base classes, for libraries that
subclass them (django-celery-results). pgtasks keeps results in its own tables (``app.backend``
is :class:`pgtasks.compat.bridge.backend.DatabaseBackend`); a backend built on these classes
stores and reads its own storage as Celery's does, and ``AsyncResult`` never reads it.
Writing: ``store_result`` prepares the value (an exception as
``exc_type``/``exc_message``/``exc_module``, pickled as itself) and calls the subclass's
``_store_result``; a key/value subclass gets Celery's meta dict through its ``set``. pgtasks'
worker calls them to mirror each task's state into such a backend
(compat/bridge/django_results.py). Reading, for code that asks such a backend itself:
``get_task_meta`` (and ``get_state``, ``get_result``, ...) through the subclass's
``_get_task_meta_for``, ``restore_group`` through ``_restore_group``, ``forget`` through
``_forget``, with Celery's cache of finished tasks."""

from __future__ import annotations

import datetime as dt
import pickle
import time
from collections import OrderedDict
from typing import Any

from pgtasks.compat.bridge.exception_meta import exception_to_python, prepare_exception
from pgtasks.compat.celery import states
from pgtasks.compat.celery._state import get_current_task
from pgtasks.compat.celery.exceptions import BackendStoreError, TaskRevokedError
from pgtasks.compat.celery.result.async_result import result_from_tuple
from pgtasks.compat.celery.utils.time import get_exponential_backoff_interval
from pgtasks.compat.kombu.utils import json as kombu_json

__all__ = [
    "Backend",
    "BaseBackend",
    "BaseDictBackend",
    "BaseKeyValueStoreBackend",
    "DisabledBackend",
    "KeyValueStoreBackend",
    "get_current_task",
]

NOT_USED = (
    "pgtasks stores task results in its own database tables; result backend classes are not "
    "read (result_backend only names where pgtasks mirrors task states, for "
    "django-celery-results). Read results with AsyncResult or app.backend."
)
CONTENT = {"json": ("application/json", "utf-8"), "pickle": ("application/x-python-serialize", "binary")}


class BaseBackend:
    """Celery's result backend base: writes through the subclass's ``_store_result``."""

    supports_native_join = False
    supports_autoexpire = False
    persistent = True
    READY_STATES = states.READY_STATES
    UNREADY_STATES = states.UNREADY_STATES
    EXCEPTION_STATES = states.EXCEPTION_STATES

    def __init__(
        self,
        app: Any = None,
        serializer: Any = None,
        max_cached_results: Any = None,
        accept: Any = None,
        expires: Any = None,
        expires_type: Any = None,
        url: Any = None,
        **kwargs: Any,
    ) -> None:
        self.app = app
        self.url = url
        conf = getattr(app, "conf", None)
        configured = conf.get("result_serializer") if conf is not None else None
        self.serializer = serializer or configured or "json"
        if expires is None and conf is not None:
            expires = conf.get("result_expires")
        self.expires = expires.total_seconds() if isinstance(expires, dt.timedelta) else expires
        self._cache = ResultCache(max_cached_results or _conf(conf, "result_cache_max", -1))

    # -- encoding ------------------------------------------------------------------------
    def _encode(self, data: Any) -> tuple[str, str, Any]:
        """``(content_type, content_encoding, payload)`` of ``data`` in the result serializer
        (JSON text with kombu's encoder, or pickle bytes)."""
        if self.serializer == "pickle":
            return (*CONTENT["pickle"], pickle.dumps(data))
        return (*CONTENT["json"], kombu_json.dumps(data))

    def encode(self, data: Any) -> Any:
        return self._encode(data)[2]

    def decode(self, payload: Any) -> Any:
        if self.serializer == "pickle":
            return pickle.loads(payload)  # pickle only by the app's opt-in
        return kombu_json.loads(payload)

    def prepare_exception(self, exc: BaseException, serializer: str | None = None) -> Any:
        """The exception itself for pickle, else Celery's dict of it."""
        return prepare_exception(exc, serializer or self.serializer)

    def exception_to_python(self, exc: Any) -> Any:
        """An exception from what ``prepare_exception`` made (see the function)."""
        return exception_to_python(exc)

    def meta_from_decoded(self, meta: dict[str, Any]) -> dict[str, Any]:
        """A decoded meta dict with a failure's result as the exception again."""
        if meta["status"] in self.EXCEPTION_STATES:
            meta["result"] = self.exception_to_python(meta["result"])
        return meta

    def decode_result(self, payload: Any) -> dict[str, Any]:
        return self.meta_from_decoded(self.decode(payload))

    def prepare_value(self, result: Any) -> Any:
        return result

    def encode_result(self, result: Any, state: str) -> Any:
        if state in self.EXCEPTION_STATES and isinstance(result, BaseException):
            return self.prepare_exception(result)
        return self.prepare_value(result)

    def current_task_children(self, request: Any = None) -> list[Any]:
        """What the task sent while it ran, as result tuples (Celery's meta ``children``)."""
        request = request or getattr(get_current_task(), "request", None)
        if request is None:
            return []
        children = getattr(request, "children", None) or []
        return [r.as_tuple() if hasattr(r, "as_tuple") else r for r in children]

    # -- writing -------------------------------------------------------------------------
    def store_result(
        self,
        task_id: str,
        result: Any,
        state: str,
        traceback: str | None = None,
        request: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Store ``state`` of ``task_id`` through the subclass's ``_store_result``. With
        ``result_backend_always_retry``, an error the backend's ``exception_safe_to_retry``
        accepts is retried after an exponential backoff (``result_backend_base_sleep_between_
        retries_ms`` doubling up to ``..._max_sleep_...``), ``result_backend_max_retries`` times,
        then is :class:`BackendStoreError`, as Celery's."""
        value = self.encode_result(result, state)
        retries = 0
        while True:
            try:
                self._store_result(task_id, value, state, traceback, request=request)
                return result
            except Exception as exc:
                retry = _conf(self.app_conf, "result_backend_always_retry", False)
                if not (retry and self.exception_safe_to_retry(exc)):
                    raise
                if retries >= _conf(self.app_conf, "result_backend_max_retries", float("inf")):
                    failed = f"failed to store result on the backend: {state} of task {task_id} ({exc!r})"
                    raise BackendStoreError(failed) from exc
                retries += 1
                time.sleep(self._retry_sleep(retries))

    @property
    def app_conf(self) -> Any:
        return getattr(self.app, "conf", None)

    def exception_safe_to_retry(self, exc: BaseException) -> bool:
        """Whether a failed store may be tried again (a backend that knows its errors says)."""
        return False

    def _retry_sleep(self, retries: int) -> float:
        factor = _conf(self.app_conf, "result_backend_base_sleep_between_retries_ms", 10)
        maximum = _conf(self.app_conf, "result_backend_max_sleep_between_retries_ms", 10000)
        return get_exponential_backoff_interval(factor, retries, maximum, True) / 1000

    def _store_result(
        self,
        task_id: str,
        result: Any,
        state: str,
        traceback: str | None = None,
        request: Any = None,
        **kw: Any,
    ) -> Any:
        raise NotImplementedError(NOT_USED)

    def mark_as_started(self, task_id: str, **meta: Any) -> Any:
        return self.store_result(task_id, meta, states.STARTED)

    def mark_as_done(self, task_id: str, result: Any, request: Any = None, **kwargs: Any) -> None:
        self._mark(task_id, result, states.SUCCESS, None, request, kwargs)
        if request is not None and getattr(request, "chord", None):
            self.on_chord_part_return(request, kwargs.get("state", states.SUCCESS), result)

    def mark_as_failure(
        self,
        task_id: str,
        exc: BaseException,
        traceback: str | None = None,
        request: Any = None,
        **kwargs: Any,
    ) -> None:
        self._mark(task_id, exc, states.FAILURE, traceback, request, kwargs)
        if request is not None and getattr(request, "chord", None):
            self.on_chord_part_return(request, kwargs.get("state", states.FAILURE), exc)

    def mark_as_retry(
        self,
        task_id: str,
        exc: BaseException,
        traceback: str | None = None,
        request: Any = None,
        **kwargs: Any,
    ) -> None:
        self._mark(task_id, exc, states.RETRY, traceback, request, kwargs)

    def mark_as_revoked(self, task_id: str, reason: str = "", request: Any = None, **kwargs: Any) -> None:
        exc = TaskRevokedError(reason)
        self._mark(task_id, exc, states.REVOKED, None, request, kwargs)
        if request is not None and getattr(request, "chord", None):
            self.on_chord_part_return(request, kwargs.get("state", states.REVOKED), exc)

    def _mark(
        self,
        task_id: str,
        result: Any,
        default_state: str,
        traceback: str | None,
        request: Any,
        options: dict[str, Any],
    ) -> None:
        """The ``mark_as_*`` methods: store unless ``store_result=False``, in ``state`` if given."""
        if options.get("store_result", True):
            state = options.get("state", default_state)
            self.store_result(task_id, result, state, traceback=traceback, request=request)

    def on_chord_part_return(self, request: Any, state: str, result: Any, **kwargs: Any) -> None:
        """A chord header task ended (a backend that counts chords overrides it)."""

    def save_group(self, group_id: str, result: Any) -> Any:
        return self._save_group(group_id, result)

    def _save_group(self, group_id: str, result: Any) -> Any:
        raise NotImplementedError(NOT_USED)

    def delete_group(self, group_id: str) -> None:
        self._cache.pop(group_id, None)
        self._delete_group(group_id)

    def _delete_group(self, group_id: str) -> None:
        raise NotImplementedError(NOT_USED)

    # -- reading (this backend's own storage) ---------------------------------------------
    def get_task_meta(self, task_id: str, cache: bool = True) -> dict[str, Any]:
        """The task's meta dict from the subclass's ``_get_task_meta_for``; a SUCCESS is
        cached and not read again."""
        if cache and task_id in self._cache:
            return self._cache[task_id]  # type: ignore[no-any-return]
        meta = self._get_task_meta_for(task_id)
        if cache and meta.get("status") == states.SUCCESS:
            self._cache[task_id] = meta
        return meta

    def _get_task_meta_for(self, task_id: str) -> dict[str, Any]:
        raise NotImplementedError(NOT_USED)

    def reload_task_result(self, task_id: str) -> None:
        self._cache[task_id] = self.get_task_meta(task_id, cache=False)

    def get_state(self, task_id: str) -> str:
        return str(self.get_task_meta(task_id)["status"])

    get_status = get_state

    def get_result(self, task_id: str) -> Any:
        return self.get_task_meta(task_id).get("result")

    def get_traceback(self, task_id: str) -> Any:
        return self.get_task_meta(task_id).get("traceback")

    def get_children(self, task_id: str) -> Any:
        return self.get_task_meta(task_id).get("children")

    def get_group_meta(self, group_id: str, cache: bool = True) -> Any:
        """The group's meta dict (its ``result`` a GroupResult) from ``_restore_group``."""
        if cache and group_id in self._cache:
            return self._cache[group_id]
        meta = self._restore_group(group_id)
        if cache and meta is not None:
            self._cache[group_id] = meta
        return meta

    def reload_group_result(self, group_id: str) -> None:
        self._cache[group_id] = self.get_group_meta(group_id, cache=False)

    def restore_group(self, group_id: str, cache: bool = True) -> Any:
        """The saved GroupResult of ``group_id``, or None."""
        meta = self.get_group_meta(group_id, cache=cache)
        return meta["result"] if meta else None

    def _restore_group(self, group_id: str) -> Any:
        raise NotImplementedError(NOT_USED)

    def forget(self, task_id: str) -> None:
        """Remove the task's stored state (the subclass's ``_forget``)."""
        self._cache.pop(task_id, None)
        self._forget(task_id)

    def _forget(self, task_id: str) -> None:
        raise NotImplementedError("this result backend does not implement forget")

    def cleanup(self) -> None:
        """Remove expired results (a backend that stores them overrides it)."""

    def process_cleanup(self) -> None:
        """Called in the worker after each task (nothing here)."""

    def wait_for(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NOT_USED)


Backend = BaseBackend


class BaseDictBackend(BaseBackend):
    """Celery's backend storing task meta as dicts."""


class BaseKeyValueStoreBackend(BaseDictBackend):
    """Celery's base of the key/value result backends (``KeyValueStoreBackend`` is it with
    Celery's synchronous result reading). pgtasks' own backend is not one: results are rows
    of its database (``isinstance(app.backend, BaseKeyValueStoreBackend)`` is False)."""


class KeyValueStoreBackend(BaseKeyValueStoreBackend):
    """Celery's key/value result backend base: a task's meta dict under
    ``celery-task-meta-<id>`` through the subclass's ``get``/``set``/``delete``."""

    key_t = str
    task_keyprefix = "celery-task-meta-"
    group_keyprefix = "celery-taskset-meta-"

    def get_key_for_task(self, task_id: str, key: str = "") -> str:
        return f"{self.task_keyprefix}{task_id}{key}"

    def get_key_for_group(self, group_id: str, key: str = "") -> str:
        return f"{self.group_keyprefix}{group_id}{key}"

    def _get_result_meta(
        self, result: Any, state: str, traceback: str | None, request: Any, format_date: bool = True
    ) -> dict[str, Any]:
        """Celery's meta dict; with ``result_extended`` the request's name, arguments, worker,
        retries and queue too."""
        done = dt.datetime.now(dt.timezone.utc) if state in self.READY_STATES else None
        meta: dict[str, Any] = {
            "status": state,
            "result": result,
            "traceback": traceback,
            "children": self.current_task_children(request),
            "date_done": done.isoformat() if done is not None and format_date else done,
        }
        if request is not None and self.app is not None and self.app.conf.get("result_extended"):
            info = getattr(request, "delivery_info", None) or {}
            meta.update(
                name=getattr(request, "task", None),
                args=list(request.args) if getattr(request, "args", None) is not None else None,
                kwargs=getattr(request, "kwargs", None),
                worker=getattr(request, "hostname", None),
                retries=getattr(request, "retries", None),
                queue=info.get("routing_key"),
            )
        return meta

    def _store_result(
        self,
        task_id: str,
        result: Any,
        state: str,
        traceback: str | None = None,
        request: Any = None,
        **kw: Any,
    ) -> Any:
        key = self.get_key_for_task(task_id)
        current = self.get(key)
        # a ready state is never replaced by an unready one (a late STARTED or progress)
        ready = isinstance(current, dict) and current.get("status") in self.READY_STATES
        if ready and state not in self.READY_STATES:
            return result
        meta = self._get_result_meta(result, state, traceback, request)
        meta["task_id"] = task_id
        self.set(key, self.encode(meta))
        return result

    def _get_task_meta_for(self, task_id: str) -> dict[str, Any]:
        meta = self.get(self.get_key_for_task(task_id))
        if not meta:
            return {"status": states.PENDING, "result": None}
        return self.decode_result(meta)

    def _restore_group(self, group_id: str) -> Any:
        meta = self.get(self.get_key_for_group(group_id))
        if not meta:
            return None
        meta = self.decode(meta)
        meta["result"] = result_from_tuple(meta["result"], self.app)
        return meta

    def _forget(self, task_id: str) -> None:
        self.delete(self.get_key_for_task(task_id))

    def _save_group(self, group_id: str, result: Any) -> Any:
        self.set(self.get_key_for_group(group_id), self.encode({"result": result.as_tuple()}))
        return result

    def _delete_group(self, group_id: str) -> None:
        self.delete(self.get_key_for_group(group_id))

    def get(self, key: str) -> Any:
        raise NotImplementedError("a key/value backend implements get")

    def set(self, key: str, value: Any) -> None:
        raise NotImplementedError("a key/value backend implements set")

    def delete(self, key: str) -> None:
        raise NotImplementedError("a key/value backend implements delete")


class DisabledBackend(BaseBackend):
    """Celery's backend for ``result_backend=None``."""


class ResultCache(OrderedDict[str, Any]):
    """Celery's backend cache: the ``limit`` (``result_cache_max``) most recently stored
    entries; 0 keeps every one, -1 (the default) none."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: str, value: Any) -> None:
        if self.limit is not None and self.limit < 0:
            return
        super().__setitem__(key, value)
        self.move_to_end(key)
        while self.limit and len(self) > self.limit:
            self.popitem(last=False)


def _conf(conf: Any, name: str, default: Any) -> Any:
    value = conf.get(name) if conf is not None else None
    return default if value is None else value
