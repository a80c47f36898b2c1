"""Celery's ``celery.result``: each result class in a module of its own (``AsyncResult`` in
async_result.py, ``EagerResult``, ``ResultSet``, ``GroupResult``, ``ResultBase``) and the
join guards (join.py); this package only re-exports them."""

from __future__ import annotations

from pgtasks.compat.celery.result.async_result import AsyncResult, result_from_tuple
from pgtasks.compat.celery.result.base import ResultBase
from pgtasks.compat.celery.result.eager_result import EagerResult
from pgtasks.compat.celery.result.group_result import GroupResult
from pgtasks.compat.celery.result.join import allow_join_result, denied_join_result
from pgtasks.compat.celery.result.result_set import ResultSet

__all__ = [
    "AsyncResult",
    "EagerResult",
    "GroupResult",
    "ResultBase",
    "ResultSet",
    "allow_join_result",
    "denied_join_result",
    "result_from_tuple",
]
