"""Celery's ``celery.backends``: only the base classes (base.py) are served; results live in
the pgtasks database (``app.backend``, bridge/backend.py)."""
