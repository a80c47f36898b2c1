from celery import current_app as current_celery_app
from celery.result import AsyncResult
from celery.utils.time import maybe_make_aware

from project.config import settings


def route_task(name, args, kwargs, options, task=None, **kw):
    if ":" in name:
        queue, _ = name.split(":")
        return {"queue": queue}
    return {"queue": "celery"}


def create_celery():
    celery_app = current_celery_app
    celery_app.config_from_object(settings, namespace="CELERY")
    celery_app.conf.update(task_track_started=True)
    celery_app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
    celery_app.conf.update(result_persistent=True, worker_send_task_events=False)
    celery_app.conf.update(task_routes=(route_task,))
    return celery_app


def get_task_info(task_id):
    task_result = AsyncResult(task_id)
    result = {"task_id": task_id, "task_status": task_result.status, "task_result": task_result.result}
    if task_result.date_done is not None:
        result["done_at"] = maybe_make_aware(task_result.date_done).isoformat()
    return result
