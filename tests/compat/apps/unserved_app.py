"""A Celery app that imports a Celery module pgtasks does not serve."""

from celery import Celery
from celery.events import EventReceiver  # noqa: F401

app = Celery("unserved")
