"""The Celery apps under tests/compat/apps import ``celery``: install pgtasks' names first."""

from __future__ import annotations

from pgtasks.compat import install

install()
