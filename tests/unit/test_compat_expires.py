"""Celery's ``result_expires`` as the engine's retention."""

from __future__ import annotations

import datetime as dt

import pytest

from pgtasks.compat.bridge.configuration import expires_seconds
from pgtasks.compat.celery.exceptions import ImproperlyConfigured


def test_a_retention_past_a_century_keeps_the_results_as_celery_would() -> None:
    """Celery takes any timedelta; the engine's ages stop at a century, and no result can be
    older than that: kept, as with None, instead of a worker that refuses to start."""
    assert expires_seconds(dt.timedelta(days=365 * 200)) is None
    assert expires_seconds(1e300) is None
    assert expires_seconds(dt.timedelta(days=1)) == 86_400.0
    assert expires_seconds(0) is None and expires_seconds(None) is None
    with pytest.raises(ImproperlyConfigured, match="not inf"):
        expires_seconds(float("inf"))
