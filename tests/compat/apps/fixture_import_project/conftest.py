"""A conftest written as django-celery-beat's and django-celery-results' are: Celery's pytest
fixtures imported by name (the plugin is not enabled) and a ``Trap`` as the default app."""

import pytest
from celery import Celery
from celery.contrib.pytest import (  # noqa: F401 (fixtures, used by name)
    celery_app,
    celery_config,
    celery_enable_logging,
    celery_parameters,
    depends_on_current_app,
    use_celery_app_trap,
)
from celery.contrib.testing.app import Trap

proj = Celery("proj")  # the project's app (its celery.py), current once created
proj.config_from_object({"CELERY_TIMEZONE": "Asia/Tokyo"}, namespace="CELERY")


@pytest.fixture(scope="session", autouse=True)
def setup_default_app_trap():
    from celery._state import set_default_app

    set_default_app(Trap())
