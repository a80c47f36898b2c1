"""Celery's ``celery.contrib.testing.tasks``: the ``ping`` task a test worker runs to show it is
up. Importing this module registers it (``celery.ping``) as a shared task, as Celery's does."""

from __future__ import annotations

from typing import Any

from pgtasks.compat.bridge.registration import shared_task

__all__ = ["ping"]


def _ping() -> str:
    """Answers ``"pong"``: the task a test worker runs to show it is ready."""
    return "pong"


ping: Any = shared_task(name="celery.ping")(_ping)
