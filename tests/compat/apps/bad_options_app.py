"""Tasks with option values of the wrong kind, written only against Celery's public API: each
body runs once (its ledger line) and fails with what the option got wrong."""

from __future__ import annotations

import os

from celery import Celery

from tests.compat.apps.ledger import note

app = Celery("badopts", broker=os.environ.get("PGTASKS_DATABASE_URL"))


@app.task(name="badopts.bad_throws", throws=5)
def bad_throws() -> None:
    note("bad_throws")
    raise ValueError("the task's own error")


@app.task(name="badopts.retry_with", bind=True, max_retries=3)
def retry_with(self, option: str, value: object) -> None:
    note("retry_with")
    raise self.retry(exc=ValueError("again"), **{option: value})


@app.task(name="badopts.bad_delay", bind=True, max_retries=3, default_retry_delay="x")
def bad_delay(self) -> None:
    note("bad_delay")
    raise self.retry(exc=ValueError("again"))


@app.task(name="badopts.bad_max_retries", bind=True, max_retries="3", default_retry_delay=0)
def bad_max_retries(self) -> None:
    note("bad_max_retries")
    raise self.retry(exc=ValueError("again"))


@app.task(name="badopts.bad_autoretry", autoretry_for="ValueError", max_retries=3)
def bad_autoretry() -> None:
    note("bad_autoretry")
    raise ValueError("not retried")
