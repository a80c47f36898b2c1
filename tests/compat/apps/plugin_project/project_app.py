"""A project's Celery app and its tasks, declared with ``@app.task`` on it (not
``@shared_task``), as cookiecutter-flask-restful's: shared_task_tests.py runs them on the
pytest plugin's session app."""

from celery import Celery

celery = Celery("project", broker="memory://", backend="cache+memory://")


class ContextTask(celery.Task):
    """The project's base task (Flask's pattern): the session app's copies take its own."""

    marker = "project"


celery.Task = ContextTask


@celery.task
def dummy_task():
    return "OK"


@celery.task(bind=True)
def which_app(self):
    return [self.app.main, getattr(self, "marker", None)]


@celery.task(shared=False)
def private():
    return "private"
