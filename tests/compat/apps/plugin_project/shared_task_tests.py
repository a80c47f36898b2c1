"""cookiecutter-flask-restful's test: the plugin's session app takes the project's settings
and its worker runs a task the project declared with ``@app.task`` on its own app (Celery's
``shared=True`` default makes it in every app finalized later). Run by
tests/compat/test_pytest_plugin.py in a pytest of its own."""

import pytest

from .project_app import celery, dummy_task, which_app


@pytest.fixture(scope="session")
def celery_session_app(celery_session_app):
    celery_session_app.conf = celery.conf
    yield celery_session_app


def test_the_session_worker_runs_a_task_of_the_projects_app(celery_session_app, celery_session_worker):
    assert dummy_task.delay().get(timeout=20) == "OK"


def test_the_session_apps_copy_is_bound_to_it(celery_session_app, celery_session_worker):
    # as Celery 5.5.3: self.app is the session app, whose Task is the base (not ContextTask)
    assert which_app.delay().get(timeout=20) == ["celery.tests", None]


def test_shared_false_keeps_a_task_to_its_app(celery_session_app):
    names = {name for name in celery_session_app.tasks if ".project_app." in name}
    assert names == {
        "tests.compat.apps.plugin_project.project_app.dummy_task",
        "tests.compat.apps.plugin_project.project_app.which_app",
    }
    assert "tests.compat.apps.plugin_project.project_app.private" in celery.tasks
