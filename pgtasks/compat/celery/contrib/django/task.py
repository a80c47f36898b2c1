"""``celery.contrib.django.task``: Celery's ``DjangoTask`` (``task_cls=
"celery.contrib.django.task:DjangoTask"``), whose ``delay_on_commit`` and
``apply_async_on_commit`` send the task when the current database transaction commits. pgtasks'
Task has both already; this class is the name Django projects configure."""

from __future__ import annotations

from pgtasks.compat.celery.app.task import Task


class DjangoTask(Task):
    """A Task for Django projects: ``delay_on_commit`` / ``apply_async_on_commit`` wait for
    ``transaction.on_commit`` (at once outside a transaction, or without Django)."""


__all__ = ["DjangoTask"]
