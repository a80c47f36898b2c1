"""Celery's ``celery.loaders``: the loader classes by name (``Celery(loader=...)``).

A loader is what ``app.loader`` gives: the object libraries call to import an app's task
modules (django-celery-beat's admin calls ``import_default_modules()``) and the hooks a worker
calls around its life and each task. See :mod:`.base`.
"""

from pgtasks.compat.celery.loaders.base import LOADER_ALIASES, get_loader_cls

__all__ = ["LOADER_ALIASES", "get_loader_cls"]
