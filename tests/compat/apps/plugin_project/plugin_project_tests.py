"""A project's own tests written with Celery's pytest plugin, as Celery's docs show them
(the plugin enabled with ``-p celery.contrib.pytest``): run by
tests/compat/test_pytest_plugin.py in a pytest of their own."""

import pytest
from celery import Task, shared_task
from celery.contrib.abortable import AbortableTask  # noqa: F401 (the project imports it)


@shared_task(name="plugin.mul")
def mul(x, y):
    return x * y


class Triple(Task):
    """A class-based task, registered through ``celery_class_tasks``."""

    name = "plugin.triple"

    def run(self, x):
        return 3 * x


@pytest.fixture(scope="session")
def celery_config():
    return {"broker_url": "memory://", "result_backend": "rpc://"}


@pytest.fixture(scope="session")
def celery_class_tasks():
    return [Triple]


def test_create_task(celery_app, celery_worker):
    @celery_app.task
    def add(x, y):
        return x + y

    assert add.delay(4, 4).get(timeout=30) == 8


def test_shared_task_runs_on_the_test_app(celery_app, celery_worker):
    assert mul.delay(4, 5).get(timeout=30) == 20


def test_the_test_app_has_celerys_test_settings(celery_app):
    # Celery's plugin builds a TestApp: its test settings under celery_config's
    conf = celery_app.conf
    assert conf.worker_hijack_root_logger is False and conf.worker_log_color is False
    assert conf.accept_content == {"json"} and conf.timezone == "UTC" and conf.broker_heartbeat == 0
    assert conf.result_backend == "rpc://"  # celery_config's own wins


@pytest.mark.celery(task_default_queue="marked")
def test_the_celery_marker_overrides_settings(celery_app):
    assert celery_app.conf.task_default_queue == "marked"


def test_session_worker(celery_session_app, celery_session_worker):
    @celery_session_app.task(name="plugin.session.sub")
    def sub(x, y):
        return x - y

    assert sub.delay(9, 4).get(timeout=30) == 5


def test_class_tasks_are_registered_for_the_session_worker(celery_session_app, celery_session_worker):
    assert celery_session_app.send_task("plugin.triple", (3,)).get(timeout=30) == 9


def test_a_tests_app_reaches_the_session_worker(celery_app, celery_session_worker):
    # As Celery's own integration suite sends: from the test's app, to the session's worker
    # (kombu's memory transport is one per process).
    assert celery_app.send_task("plugin.mul", (6, 7)).get(timeout=30) == 42
