import os
import time
from pathlib import Path

from celery import shared_task
from celery_once import QueueOnce
from celery_progress.backend import ProgressRecorder
from celery_singleton import Singleton


def wait_for_gate(name):
    """Wait until the driver opens this task's gate (a file), 60 s at most."""
    gate = Path(os.environ["GATE_DIR"]) / name
    deadline = time.monotonic() + 60
    while not gate.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {name} never opened")
        time.sleep(0.02)


@shared_task(base=QueueOnce, once={"graceful": True})
def refresh_report(gate):
    wait_for_gate(gate)
    return "refreshed"


@shared_task(base=Singleton)
def rebuild_index(gate):
    wait_for_gate(gate)
    return "rebuilt"


@shared_task(bind=True)
def import_rows(self, gate):
    recorder = ProgressRecorder(self)
    recorder.set_progress(1, 4, description="first rows")
    wait_for_gate(gate)
    recorder.set_progress(4, 4, description="all rows")
    return "imported"


@shared_task
def sent_mail():
    """The mail the locmem backend holds in this worker process."""
    from django.core import mail

    return [{"subject": m.subject, "to": m.to, "body": m.body} for m in getattr(mail, "outbox", [])]


@shared_task
def reindex(gate):
    """The same job without celery-singleton: pgtasks' deduplication keys instead."""
    wait_for_gate(gate)
    return "reindexed"
