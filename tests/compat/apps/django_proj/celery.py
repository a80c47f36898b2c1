"""The usual Django project's celery.py."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.compat.apps.django_proj.settings")

app = Celery("django_proj")
app.config_from_object("tests.compat.apps.django_proj.settings", namespace="CELERY")
app.autodiscover_tasks(lambda: ["tests.compat.apps.django_proj.orders"])
