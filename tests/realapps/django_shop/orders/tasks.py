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
