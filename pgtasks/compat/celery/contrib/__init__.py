"""Celery's ``celery.contrib``: abortable tasks, the test helpers and pytest plugin, Django's
task class; each in its own module."""
