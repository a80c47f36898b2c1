"""Celery's ``celery.worker``: ``celery.worker.request`` (the name tracing integrations import)
and ``celery.worker.state`` (views of the workers' shared state in the database) are served;
the worker is pgtasks' own, and Celery's other worker modules are refused
(bridge/refused.py)."""
