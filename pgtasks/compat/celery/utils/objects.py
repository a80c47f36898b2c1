"""Celery's ``celery.utils.objects``: ``cached_property`` (kombu's, as Celery re-exports it)."""

from __future__ import annotations

from pgtasks.compat.kombu.utils.objects import cached_property

__all__ = ["cached_property"]
