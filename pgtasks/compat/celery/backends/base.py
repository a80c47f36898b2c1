"""Celery's ``celery.backends.base``: the result backend base classes, for libraries that
subclass them at import (django-celery-results). pgtasks keeps results in its own tables
(``app.backend`` is :class:`pgtasks.compat.bridge.backend.DatabaseBackend`); a backend built on
these classes is not used, and its storage methods say so."""

from __future__ import annotations

from typing import Any

from pgtasks.compat.celery._state import get_current_task

__all__ = [
    "Backend",
    "BaseBackend",
    "BaseDictBackend",
    "DisabledBackend",
    "KeyValueStoreBackend",
    "get_current_task",
]

NOT_USED = (
    "pgtasks stores task results in its own database tables; result backend classes are not "
    "used (result_backend is ignored). Read results with AsyncResult or app.backend."
)


class BaseBackend:
    """Celery's result backend base: constructible and subclassable; storage is pgtasks'."""

    supports_native_join = False
    supports_autoexpire = False
    persistent = True

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
        self.expires = expires

    def _not_used(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NOT_USED)

    store_result = mark_as_done = mark_as_failure = mark_as_started = mark_as_revoked = _not_used
    mark_as_retry = get_task_meta = get_state = get_result = wait_for = forget = _not_used
    save_group = restore_group = delete_group = _not_used


Backend = BaseBackend


class BaseDictBackend(BaseBackend):
    """Celery's backend storing task meta as dicts."""


class KeyValueStoreBackend(BaseDictBackend):
    """Celery's key/value result backend base."""

    key_t = str


class DisabledBackend(BaseBackend):
    """Celery's backend for ``result_backend=None``."""
