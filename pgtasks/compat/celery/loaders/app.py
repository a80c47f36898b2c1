"""Celery's ``celery.loaders.app``: :class:`AppLoader`, the loader of an app created with
``Celery(...)`` (what ``app.loader`` is unless ``loader=`` names another)."""

from __future__ import annotations

from pgtasks.compat.celery.loaders.base import BaseLoader

__all__ = ["AppLoader"]


class AppLoader(BaseLoader):
    """The default loader of a Celery app: :class:`BaseLoader` as it is."""
