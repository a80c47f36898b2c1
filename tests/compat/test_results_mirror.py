"""Celery's result backend base (what django-celery-results' backends build on) and how
``result_backend`` names the class pgtasks mirrors task states into
(compat/bridge/django_results.py; the rows themselves: tests/realapps/test_django_shop.py).
Its reading half as the library's own test suite drives it: a backend reads its own storage
(``get_status``, ``get_result``, ``forget``, ``restore_group``), ``mark_as_*`` tells a chord
its header part ended, ``result_backend_always_retry`` retries a store, and
``billiard.einfo.ExceptionInfo`` takes ``sys.exc_info()``. pgtasks' ``AsyncResult`` still reads
pgtasks' tables, never such a backend."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from pgtasks.compat.billiard.einfo import ExceptionInfo
from pgtasks.compat.bridge.django_results import backend_path, mirror_of
from pgtasks.compat.celery import Celery, states
from pgtasks.compat.celery.backends.base import BaseDictBackend, KeyValueStoreBackend
from pgtasks.compat.celery.exceptions import BackendStoreError
from pgtasks.compat.celery.result import AsyncResult, GroupResult


class DictBackend(KeyValueStoreBackend):
    """A key/value backend as a library writes one: get/set/delete on a store of its own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.store: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.store.get(key)

    def set(self, key: str, value: Any) -> None:
        self.store[key] = value

    def delete(self, key: str) -> None:
        self.store.pop(key, None)

    def encode(self, data: Any) -> Any:  # as django-celery-results' cache backend: the dict
        return data

    def decode(self, data: Any) -> Any:
        return data


def test_result_backend_names_the_class_to_mirror_into() -> None:
    assert backend_path("django-db") == "django_celery_results.backends.database:DatabaseBackend"
    assert backend_path("django-cache") == "django_celery_results.backends.cache:CacheBackend"
    assert backend_path("proj.results:Mine") == "proj.results:Mine"
    for ignored in ("redis://localhost/0", "db+postgresql://h/db", "rpc", "", None):
        assert backend_path(ignored) is None
    # Celery's URLs are replaced by pgtasks' tables: nothing to mirror, nothing imported
    assert mirror_of(Celery("plain", backend="redis://localhost/0")) is None
    assert mirror_of(Celery("missing", backend="no_such_module_here:Backend")) is None


def test_a_key_value_backend_gets_celerys_meta_and_keeps_a_ready_state() -> None:
    app = Celery("kv", backend=f"{__name__}:DictBackend")
    app.conf.result_extended = True
    mirror = mirror_of(app)
    assert mirror is not None and isinstance(mirror.backend, DictBackend)
    backend = mirror.backend
    request = types.SimpleNamespace(
        task="t.add",
        args=(2, 3),
        kwargs={},
        hostname="celery@h",
        retries=0,
        delivery_info={"routing_key": "celery"},
        children=[],
    )
    backend.store_result("id1", 5, "SUCCESS", request=request)
    meta = backend.store["celery-task-meta-id1"]
    assert {k: v for k, v in meta.items() if k != "date_done"} == {
        "status": "SUCCESS",
        "result": 5,
        "traceback": None,
        "children": [],
        "task_id": "id1",
        "name": "t.add",
        "args": [2, 3],
        "kwargs": {},
        "worker": "celery@h",
        "retries": 0,
        "queue": "celery",
    }
    backend.store_result("id1", {"pid": 1}, "STARTED", request=request)  # late: ignored
    assert backend.store["celery-task-meta-id1"]["status"] == "SUCCESS"
    backend.mark_as_revoked("id2", "revoked")
    assert backend.store["celery-task-meta-id2"]["result"] == {
        "exc_type": "TaskRevokedError",
        "exc_message": ["revoked"],
        "exc_module": "celery.exceptions",
    }
    backend.mark_as_done("id3", 1, store_result=False)
    assert "celery-task-meta-id3" not in backend.store


@pytest.fixture
def app(sqlite_app: Celery) -> Celery:
    return sqlite_app


def test_a_backend_reads_what_it_stored(app: Celery) -> None:
    backend = DictBackend(app=app)
    assert (backend.get_status("t1"), backend.get_result("t1")) == (states.PENDING, None)
    backend.mark_as_done("t1", {"foo": "bar"})
    assert backend.get_state("t1") == states.SUCCESS and backend.get_result("t1") == {"foo": "bar"}
    assert backend.get_children("t1") == []
    backend.forget("t1")
    assert backend.get_result("t1") is None and "t1" not in backend._cache
    try:
        raise KeyError("foo")
    except KeyError as exc:
        einfo = ExceptionInfo(sys.exc_info())
        backend.mark_as_failure("t2", exc, traceback=einfo.traceback)
    assert backend.get_status("t2") == states.FAILURE and isinstance(backend.get_result("t2"), KeyError)
    assert backend.get_traceback("t2") == einfo.traceback and "raise KeyError" in einfo.traceback
    backend.process_cleanup()
    backend.cleanup()


def test_a_backend_saves_restores_and_deletes_a_group(app: Celery) -> None:
    backend = DictBackend(app=app)
    results = [AsyncResult(f"m{i}", app=app) for i in range(3)]
    GroupResult("g1", results, app=app).save(backend=backend)
    restored = GroupResult.restore("g1", backend=backend, app=app)
    assert restored is not None and restored.id == "g1" and restored.results == results
    GroupResult("g1", results, app=app).delete(backend=backend)
    assert GroupResult.restore("g1", backend=backend, app=app) is None


def test_results_are_cached_only_as_result_cache_max_says(app: Celery) -> None:
    backend = DictBackend(app=app)  # result_cache_max is -1: no cache, as Celery's default
    backend.mark_as_done("t", 1)
    backend.store.clear()
    assert backend.get_status("t") == states.PENDING
    app.conf.result_cache_max = 2
    cached = DictBackend(app=app)
    for task_id in ("a", "b", "c"):
        cached.mark_as_done(task_id, task_id)
        assert cached.get_result(task_id) == task_id
    cached.store.clear()
    assert [cached.get_status(t) for t in "abc"] == [states.PENDING, states.SUCCESS, states.SUCCESS]


def test_mark_as_done_and_failure_tell_a_chord_its_part_ended(app: Celery) -> None:
    ended: list[tuple[str, str]] = []

    class Counting(DictBackend):
        def on_chord_part_return(self, request: Any, state: str, result: Any, **kwargs: Any) -> None:
            ended.append((request.id, state))

    backend = Counting(app=app)
    backend.mark_as_done("h1", 1, request=types.SimpleNamespace(id="h1", chord={"task": "body"}))
    backend.mark_as_failure("h2", ValueError(), request=types.SimpleNamespace(id="h2", chord={"task": "b"}))
    backend.mark_as_done("plain", 1, request=types.SimpleNamespace(id="plain", chord=None))
    assert ended == [("h1", states.SUCCESS), ("h2", states.FAILURE)]


class Flaky(BaseDictBackend):
    """Fails its first ``failures`` stores with an error it says is safe to retry."""

    def __init__(self, *args: Any, failures: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failures, self.stored = failures, []

    def _store_result(self, task_id: str, result: Any, state: str, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection closed")
        self.stored.append((task_id, state))
        return result

    def exception_safe_to_retry(self, exc: BaseException) -> bool:
        return isinstance(exc, ConnectionError)


def test_result_backend_always_retry_retries_a_store(app: Celery) -> None:
    with pytest.raises(ConnectionError):  # off by default, as Celery's
        Flaky(app=app).store_result("t", 1, states.SUCCESS)
    app.conf.result_backend_always_retry = True
    flaky = Flaky(app=app, failures=2)
    flaky.store_result("t", 1, states.SUCCESS)
    assert flaky.stored == [("t", states.SUCCESS)]
    app.conf.result_backend_max_retries = 1
    with pytest.raises(BackendStoreError, match="SUCCESS of task t"):
        Flaky(app=app, failures=2).store_result("t", 1, states.SUCCESS)


class ExpiringBackend(DictBackend):
    """Counts its cleanups, as django-celery-results' backend deletes its expired rows in one."""

    cleanups = 0

    def cleanup(self) -> None:
        type(self).cleanups += 1
        if type(self).cleanups > 1:
            raise RuntimeError("table gone")


def test_the_daily_backend_cleanup_also_cleans_the_mirrored_rows(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = Celery("cleanup", broker=sqlite_url, backend=f"{__name__}:ExpiringBackend")
    try:
        app.tasks["celery.backend_cleanup"]()  # as django-celery-beat's daily row runs it
        assert ExpiringBackend.cleanups == 1
        app.backend.cleanup()  # a failing cleanup is logged, never raised
        assert ExpiringBackend.cleanups == 2 and "could not delete its expired results" in caplog.text
    finally:
        app.close()
