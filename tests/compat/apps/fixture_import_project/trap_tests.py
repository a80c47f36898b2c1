"""``use_celery_app_trap``: while a test runs, any use of current_app fails."""

import pytest
from celery import current_app


@pytest.fixture(scope="session")
def use_celery_app_trap():
    return True


def test_the_trap_is_the_current_app(celery_app):
    with pytest.raises(RuntimeError, match="Test depends on current_app"):
        _ = current_app.conf
    assert celery_app.conf.timezone == "UTC"  # the test's own app works
