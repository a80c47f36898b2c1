"""Celery's ``celery.contrib.django``: ``DjangoTask`` (task.py)."""
