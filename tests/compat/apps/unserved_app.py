"""A Celery app that imports a Celery module pgtasks does not serve."""

from celery import Celery
from celery.utils.dispatch import Signal  # noqa: F401

app = Celery("unserved")
