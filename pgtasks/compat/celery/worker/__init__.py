"""Celery's ``celery.worker``: only ``celery.worker.request`` is served (the name tracing
integrations import); the worker is pgtasks' own, and Celery's other worker modules are
refused (bridge/refused.py)."""
