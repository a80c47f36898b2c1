"""An app using settings and options that pgtasks ignores or does not support."""

import os

from celery import Celery
from celery.signals import worker_before_create_process

app = Celery("check_app", broker=os.environ.get("PGTASKS_DATABASE_URL"))
app.conf.update(
    result_backend="redis://localhost/1",
    worker_prefetch_multiplier=1,
    task_acks_late=True,
    task_annotations={"*": {"rate_limit": "10/s"}},
    task_default_queue="work",
)


@app.task(rate_limit="10/m", ignore_result=True)
def limited():
    return 1


@worker_before_create_process.connect
def received_receiver(**kwargs):
    pass
