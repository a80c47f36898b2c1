"""An app that configures logging itself (``setup_logging``), as Celery's docs show."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, setup_logging, worker_ready

from tests.compat.apps.ledger import note

app = Celery("logging_app", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@setup_logging.connect
def configure(loglevel=None, **kwargs):
    note("signal setup_logging", loglevel, loglevel >= logging.INFO)  # a number, as Celery's
    logging.basicConfig(level=loglevel)


@after_setup_logger.connect
def after_logger(**kwargs):
    note("signal after_setup_logger")


@after_setup_task_logger.connect
def after_task_logger(**kwargs):
    note("signal after_setup_task_logger")


@worker_ready.connect
def ready(**kwargs):
    note("signal worker_ready")
