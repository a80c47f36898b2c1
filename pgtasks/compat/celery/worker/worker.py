"""Celery's ``celery.worker.worker``: ``WorkController``, the type of the workers the test
helpers start (``start_worker``, the ``celery_worker`` fixture). pgtasks' worker is its own
(``pgtasks.worker``); the rest of Celery's worker class (its blueprint) is not served."""

from __future__ import annotations

from typing import Any

__all__ = ["WorkController"]


class WorkController:
    """Celery's worker class, here the type of what ``start_worker`` and the
    ``celery_worker`` fixture yield (``TestWorkController``: ``app``, ``hostname``). pgtasks'
    worker is its own: start one with ``start_worker(app)`` or ``pgtasks worker -A proj``."""

    app: Any
    hostname: str

    def __init__(self, app: Any = None, hostname: str | None = None, **kwargs: Any) -> None:
        if type(self) is WorkController:
            raise NotImplementedError(
                "celery.worker.WorkController cannot be built in pgtasks: start a worker with "
                "celery.contrib.testing.worker.start_worker(app) or `pgtasks worker -A proj`"
            )
        self.app = app
        self.hostname = hostname or ""
