"""A Celery configuration module (``celery --config tests.compat.apps.acks_config``)."""

task_acks_late = True
task_default_rate_limit = "5/s"
