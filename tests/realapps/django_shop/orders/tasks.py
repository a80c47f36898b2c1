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
@shared_task
def boom(message):
    raise ValueError(message)


@shared_task(bind=True, max_retries=2, default_retry_delay=0)
def flaky(self, n):
    if self.request.retries < n:
        raise self.retry(exc=RuntimeError(f"try {self.request.retries}"))
    return self.request.retries


@shared_task(bind=True, track_started=True)
def tracked(self, x, y=0):
    self.update_state(state="HALFWAY", meta={"done": 1})
    return x + y


@shared_task(ignore_result=True)
def quiet(x):
    return x


@shared_task
def tsum(values):
    return sum(values)
