import os
import time

from celery import shared_task
from celery.utils.log import get_task_logger
from celery.utils.time import maybe_make_aware
from django.utils import timezone

logger = get_task_logger(__name__)


@shared_task
def add(x, y):
    logger.info("adding %s and %s", x, y)
    return x + y


@shared_task(bind=True)
def stamped(self):
    return maybe_make_aware(timezone.now()).isoformat() and self.request.id


# What django-celery-results' rows record (tests/realapps/test_django_shop.py reads them)
def _wait_for(path):
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


@shared_task
def boom(message):
    raise ValueError(message)


@shared_task(bind=True, max_retries=2, default_retry_delay=1)
def flaky(self, n):
    if self.request.retries < n:
        raise self.retry(exc=RuntimeError(f"try {self.request.retries}"))
    return self.request.retries


@shared_task(bind=True, track_started=True)
def tracked(self, gate, y=0):
    _wait_for(gate + ".1")
    self.update_state(state="HALFWAY", meta={"done": 1})
    _wait_for(gate + ".2")
    return 9 + y


@shared_task
def gated(gate, x):
    _wait_for(gate)
    return x


@shared_task
def tsum(values):
    return sum(values)


@shared_task(ignore_result=True)
def quiet(x):
    return x
