"""Celery's ``celery.contrib.testing``: the test app (app.py), worker (worker.py) and ``ping``
task (tasks.py)."""
