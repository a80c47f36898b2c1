"""The writing half of Celery's result backend base (what django-celery-results' backends
build on) and how ``result_backend`` names the class pgtasks mirrors task states into
(compat/bridge/django_results.py; the rows themselves: tests/realapps/test_django_shop.py)."""

from __future__ import annotations

import types
from typing import Any

from pgtasks.compat.bridge.django_results import backend_path, mirror_of
from pgtasks.compat.celery import Celery
from pgtasks.compat.celery.backends.base import KeyValueStoreBackend


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
