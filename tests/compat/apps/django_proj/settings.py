"""A Django-style settings module (Django itself is not needed): Celery's settings carry the
CELERY_ prefix, as with ``config_from_object('django.conf:settings', namespace='CELERY')``."""

import os

DEBUG = False
INSTALLED_APPS = ["tests.compat.apps.django_proj.orders"]
CELERY_BROKER_URL = os.environ.get("PGTASKS_DATABASE_URL")
CELERY_RESULT_BACKEND = "django-db"
CELERY_TASK_DEFAULT_QUEUE = "django_default"
CELERY_TASK_ROUTES = {"tests.compat.apps.django_proj.orders.tasks.ship": {"queue": "shipping"}}
CELERY_TIMEZONE = "Europe/Paris"
CELERY_TASK_TRACK_STARTED = True
CELERY_ALWAYS_EAGER = False
