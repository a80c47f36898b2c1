"""Celery's ``celery.utils.dispatch``: re-exports :class:`Signal`."""

from __future__ import annotations

from pgtasks.compat.celery.utils.dispatch.signal import Signal

__all__ = ["Signal"]
