"""Tests using the fixtures the conftest imports: run by tests/compat/test_pytest_plugin.py."""

import pytest
from celery import current_app
from celery.contrib.testing.app import Trap

from .conftest import proj


def test_the_test_app_is_not_the_current_app(celery_app):
    # As Celery's fixture: code reaching for current_app meets the project's app.
    assert current_app.main == "proj" and current_app.namespace == "CELERY"
    assert celery_app.main != "proj" and celery_app.conf.timezone == "UTC"


def test_depends_on_current_app_makes_it_current(celery_app, depends_on_current_app):
    assert current_app._get_current_object() is celery_app


def test_the_project_app_is_current_again_after_a_test(celery_app):
    assert current_app._get_current_object() is proj


def test_a_trap_fails_whatever_is_read_of_it():
    with pytest.raises(RuntimeError, match="Test depends on current_app"):
        _ = Trap().conf
