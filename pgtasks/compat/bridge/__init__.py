"""pgtasks' own side of the Celery layer: what Celery's API means on pgtasks, apart from
Celery's modules (``compat/celery/``, ``compat/kombu/``, ``compat/billiard/``).

- configuration.py: a Celery app's settings as its engine's (``broker_url`` is the database)
- registration.py: tasks made from functions, shared tasks
- publishing.py, sending.py, planning.py: sending a task or a canvas (linked rows)
- execution.py, worker_entry.py, eager.py, requests.py, retries.py: running a task
- outcomes.py: task rows read as Celery's states and exceptions
- backend.py: ``app.backend`` over pgtasks' tables
- beat_schedule.py, django_beat.py: schedules for ``pgtasks beat``
- django_support.py, pydantic_tasks.py: optional integrations
- worker_start.py, check.py, command_line.py: the command line's Celery side
- install.py, refused.py: the import rule (``celery.X.Y`` is ``compat/celery/X/Y.py``)
- celery_version.py: the Celery release whose API the layer follows (``celery.VERSION``)
"""
