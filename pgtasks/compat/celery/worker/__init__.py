"""Celery's ``celery.worker``: ``celery.worker.request`` (the name tracing integrations import)
and ``celery.worker.state`` (views of the workers' shared state in the database) are served;
the worker is pgtasks' own, and Celery's other worker modules are refused
(bridge/refused.py). ``WorkController`` is the type of the workers the test helpers start."""

from __future__ import annotations

from pgtasks.compat.celery.worker.worker import WorkController

__all__ = ["WorkController"]
