"""The Testing guide's fixtures that shape the worker and the app (``celery_worker_parameters``,
``celery_parameters``, ``celery_worker.reload()``), in a project of their own: run by
tests/compat/test_pytest_plugin.py in a pytest of their own."""

import pytest
from celery import Task
from celery.contrib.testing.worker import start_worker


class ProjectTask(Task):
    """The project's base task, given to the test app as ``task_cls``."""

    marker = "project"


@pytest.fixture(scope="session")
def celery_config():
    # the Testing guide's example: the message broker and backend a project's CI runs for Celery
    return {"broker_url": "amqp://", "result_backend": "redis://"}


@pytest.fixture(scope="session")
def celery_parameters():
    return {"task_cls": ProjectTask, "strict_typing": False}


@pytest.fixture(scope="session")
def celery_worker_parameters():
    return {"queues": ("high-prio", "low-prio")}


def test_the_worker_consumes_the_queues_of_celery_worker_parameters(celery_app, celery_worker):
    @celery_app.task
    def mul(x, y):
        return x * y

    celery_worker.reload()  # as the guide's example, after defining a task
    assert mul.apply_async((4, 4), queue="low-prio").get(timeout=20) == 16


def test_celery_parameters_make_the_app(celery_app):
    @celery_app.task
    def first(a, b):
        return a

    assert isinstance(first, ProjectTask) and first.marker == "project"
    assert first.typing is False
    first.delay(1)  # strict_typing=False: no argument check as it is sent


def test_exclude_queues_leaving_none_is_refused(celery_app):
    refused = pytest.raises(ValueError, match="leaves no queue to consume")
    with refused, start_worker(celery_app, queues="a", exclude_queues=["a"]):
        pass
