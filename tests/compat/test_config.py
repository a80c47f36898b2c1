"""Celery's configuration: old and new setting names, namespaces, config_from_object with
objects, modules and Django-style settings, the CELERY_BROKER_URL override and broker URL
errors."""

from __future__ import annotations

import datetime as dt
import types
import zoneinfo
from pathlib import Path

import pytest

from pgtasks.compat.bridge.configuration import BrokerNotSupported
from pgtasks.compat.bridge.registration import shared_task
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.exceptions import ImproperlyConfigured


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'db.sqlite3'}"


def test_defaults_are_celerys(url: str) -> None:
    app = Celery("cfg", broker=url)
    assert app.conf.task_default_queue == "celery" and app.settings.default_queue == "celery"
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ("json",)
    assert app.conf.task_always_eager is False and app.conf.result_backend is None
    assert app.conf.get("not_a_setting", "fallback") == "fallback"
    with pytest.raises(AttributeError):
        _ = app.conf.not_a_setting


def test_every_default_celery_gives_a_value_has_it(url: str) -> None:
    app = Celery("cfg", broker=url)
    conf = app.conf
    assert conf.broker_transport_options == {} and conf.broker_transport_options.get("x", 1) == 1
    assert conf.result_backend_transport_options == {} and conf.broker_pool_limit == 10
    assert conf.task_publish_retry_policy["max_retries"] == 3 and conf.broker_connection_timeout == 4
    assert conf.worker_log_format.endswith("%(message)s") and conf.event_serializer == "json"
    assert conf.result_backend_max_retries == float("inf") and conf.broker_connection_retry is True
    conf.broker_transport_options["visibility_timeout"] = 60  # a mutable default is the app's own
    assert Celery("other", broker=url).conf.broker_transport_options == {}
    assert conf.worker_pool is None and conf.beat_scheduler is None  # pgtasks decides those
    assert "broker_transport_options" not in conf.changes()  # read, not set
    app.config_from_object(types.SimpleNamespace(broker_transport_options={"from": "config"}))
    assert conf.broker_transport_options == {"from": "config"}  # a later source still wins


def test_old_and_new_names_read_the_same_value(url: str) -> None:
    app = Celery("cfg", broker=url)
    app.conf.update(CELERY_DEFAULT_QUEUE="old_style", CELERY_ALWAYS_EAGER=True)
    assert app.conf.task_default_queue == "old_style" and app.conf["CELERY_DEFAULT_QUEUE"] == "old_style"
    assert app.settings.default_queue == "old_style" and app.conf.task_always_eager is True
    app.conf.task_default_queue = "new_style"
    assert app.conf.CELERY_DEFAULT_QUEUE == "new_style"
    app.conf.beat_schedule["in-place"] = {"task": "t", "schedule": 5.0}
    assert "in-place" in app.beat_schedule


def test_config_from_object_with_and_without_namespace(url: str, caplog: pytest.LogCaptureFixture) -> None:
    app = Celery("cfg")
    app.config_from_object(
        types.SimpleNamespace(
            CELERY_BROKER_URL=url,
            CELERY_TASK_ROUTES={"a": "b"},
            CELERY_ALWAYS_EAGER=True,
            CELERY_TIMEZONE="Europe/Paris",
            DEBUG=True,
            task_default_queue="not-namespaced",
        ),
        namespace="CELERY",
    )
    assert app.settings.database_url == url and app.conf.task_routes == {"a": "b"}
    # As Celery 5.5: under a namespace an old name is no setting (CELERY_TIMEZONE is the new
    # name prefixed); a Django project's dead CELERY_ALWAYS_EAGER must not make tasks eager.
    assert app.conf.task_always_eager is False and app.zone_name == "Europe/Paris"
    assert (
        caplog.messages.count(
            "CELERY_ALWAYS_EAGER is not read with namespace='CELERY', as in Celery: name the setting "
            "CELERY_TASK_ALWAYS_EAGER"
        )
        == 1
        and app.conf.task_always_eager is False
    )  # said once
    assert app.conf.task_default_queue == "not-namespaced"  # as in Celery: current names still count
    assert app.conf.get("DEBUG") is True
    old = Celery("cfg", broker=url)
    old.config_from_object({"CELERY_ALWAYS_EAGER": True, "BROKER_URL": url, "CELERYD_CONCURRENCY": 3})
    assert old.conf.task_always_eager is True and old.conf.worker_concurrency == 3
    with pytest.raises(ImproperlyConfigured, match=r"CELERY_ALWAYS_EAGER .*-> task_always_eager"):
        Celery("cfg", broker=url).config_from_object({"CELERY_ALWAYS_EAGER": True, "task_default_queue": "x"})
    # Celery's own arguments may mix them: broker= is broker_url, beside an old name
    mixed = Celery("cfg", broker=url, CELERY_ALWAYS_EAGER=True, task_default_queue="x", CELERYD_CONCURRENCY=2)
    assert (mixed.conf.task_always_eager, mixed.conf.task_default_queue, mixed.conf.worker_concurrency) == (
        True,
        "x",
        2,
    )


def test_config_from_module_path_and_django_settings(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("PGTASKS_DATABASE_URL", url)
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "tests.compat.apps.django_proj.settings")
    from tests.compat.apps.django_proj.celery import app

    assert app.settings.default_queue == "django_default"
    assert app.conf.result_backend == "django-db" and app.conf.task_track_started is True
    assert app.conf.timezone == "Europe/Paris" and app.conf.get("INSTALLED_APPS")
    assert "tests.compat.apps.django_proj.orders.tasks.total" in app.tasks  # autodiscovered
    with pytest.raises(ModuleNotFoundError):
        Celery("cfg", broker=url).config_from_object("tests.compat.apps.no_such_settings")
    Celery("cfg", broker=url).config_from_object("tests.compat.apps.no_such_settings", silent=True)


def test_celery_broker_url_environment_variable_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env_url = f"sqlite:///{tmp_path / 'env.sqlite3'}"
    monkeypatch.setenv("CELERY_BROKER_URL", env_url)
    assert Celery("cfg", broker=f"sqlite:///{tmp_path / 'arg.sqlite3'}").settings.database_url == env_url


@pytest.mark.parametrize("broker", ["redis://localhost:6379/0", "amqp://guest@localhost//", "sqs://"])
def test_message_broker_urls_fail_saying_what_to_set(broker: str) -> None:
    with pytest.raises(BrokerNotSupported, match=r"Set broker_url .*postgresql://") as caught:
        Celery("cfg", broker=broker)
    assert isinstance(caught.value, ImproperlyConfigured)
    app = Celery("cfg", broker="sqlite:///x.sqlite3")
    with pytest.raises(BrokerNotSupported):
        app.conf.broker_url = broker


def test_kombus_memory_broker_is_a_database_of_the_process_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test settings name ``memory://`` (with task_always_eager): the app was refused
    (BrokerNotSupported), so the project's tests failed as its app module was imported."""
    eager = Celery("mem", broker="memory://", set_as_current=False)
    eager.conf.update(task_always_eager=True, task_eager_propagates=True)

    @eager.task(name="mem.add")
    def add(x: int, y: int) -> int:
        return x + y

    assert add.delay(2, 3).get() == 5
    eager.conf.task_always_eager = False
    sent = add.delay(1, 1)
    assert sent.state == "PENDING"
    # one database per process, as kombu's memory transport keeps one set of queues per process
    monkeypatch.setenv("CELERY_BROKER_URL", "memory://localhost//")
    other = Celery("mem2", set_as_current=False)
    assert other.settings.database_url == eager.settings.database_url
    assert other.settings.database_url.startswith("sqlite:///")
    assert other.send_task("mem.add", (4, 4), task_id=sent.id).id == sent.id  # the same row
    other.close()
    eager.close()


def test_config_from_envvar_says_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    app = Celery("envvar", broker=f"sqlite:///{tmp_path / 'e.sqlite3'}", set_as_current=False)
    monkeypatch.delenv("PROJ_CELERY_CONFIG", raising=False)
    with pytest.raises(
        ImproperlyConfigured, match=r"set it to the configuration module's name \(PROJ_CELERY_CONFIG="
    ):
        app.config_from_envvar("PROJ_CELERY_CONFIG")
    assert app.config_from_envvar("PROJ_CELERY_CONFIG", silent=True) is False  # as Celery's


def test_result_backend_is_accepted_and_postgres_urls_are_the_database(pg_url: str) -> None:
    app = Celery("cfg", broker=pg_url.replace("postgresql://", "postgres://", 1), backend="redis://x/1")
    assert app.settings.database_url.startswith("postgres://") and app.conf.result_backend == "redis://x/1"
    assert app.send_task("cfg.anything").state == "PENDING"
    app.close()


class _SettingsNotReady:
    """Stands in for Django's settings while its settings module is still importing: any
    read raises, as Django's does (ImproperlyConfigured)."""

    ready = False

    def __getattr__(self, name: str) -> object:
        if not type(self).ready:
            raise RuntimeError(f"settings read too early: {name}")
        values = {"CELERY_TASK_DEFAULT_QUEUE": "from-django", "CELERY_TASK_ALWAYS_EAGER": False}
        if name not in values:
            raise AttributeError(name)
        return values[name]


def test_config_from_object_reads_nothing_until_a_setting_is_used(url: str) -> None:
    settings = _SettingsNotReady()
    app = Celery("lazy", broker=url)
    app.config_from_object(settings, namespace="CELERY")  # Django's settings not read yet
    _SettingsNotReady.ready = True
    try:
        assert app.conf.task_default_queue == "from-django"
        assert app.settings.default_queue == "from-django"  # the engine follows on first use
    finally:
        _SettingsNotReady.ready = False
        app.close()


def test_settings_changed_after_config_from_object_take_effect(url: str) -> None:
    settings = types.SimpleNamespace(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=url)
    app = Celery("live")
    app.config_from_object(settings, namespace="CELERY")

    @app.task(name="live.double")
    def double(x: int) -> int:
        return 2 * x

    assert app.conf.task_always_eager is False
    settings.CELERY_TASK_ALWAYS_EAGER = True  # what pytest-django's settings fixture does
    result = double.delay(21)
    assert result.get() == 42 and type(result).__name__ == "EagerResult"
    app.conf.task_always_eager = False  # set on the conf itself: wins over the source
    assert app.conf.task_always_eager is False
    app.close()


def test_every_celery_setting_is_in_the_conf_with_its_default(url: str) -> None:
    app = Celery("defaults", broker=url)
    assert "task_time_limit" in app.conf and "timezone" in app.conf and "CELERYD_TASK_TIME_LIMIT" in app.conf
    assert app.conf.get("task_time_limit", 5) is None and app.conf.get("timezone", "x") is None
    assert app.conf.get("task_default_queue", "x") == "celery"
    assert "no_such_setting" not in app.conf and app.conf.get("no_such_setting", 5) == 5
    app.add_defaults({"task_soft_time_limit": 30, "task_default_queue": "from-defaults"})
    assert app.conf.task_soft_time_limit == 30  # added defaults fill what nothing else sets
    app.config_from_object({"task_soft_time_limit": 10})
    assert app.conf.task_soft_time_limit == 10
    app.close()


def test_a_shared_task_registers_in_an_app_whose_broker_url_was_refused(tmp_path: Path) -> None:
    """Registering a task reads no setting: an app left holding a broker URL that was refused
    (the assignment raised) does not break a shared task declared later in the process."""
    app = Celery("refused", broker=f"sqlite:///{tmp_path / 'refused.sqlite3'}", set_as_current=False)
    with pytest.raises(BrokerNotSupported):
        app.conf.broker_url = "redis://localhost:6379/0"

    @shared_task(name="cfg.shared_after_refusal")
    def shared() -> str:
        return "ok"

    assert app.tasks["cfg.shared_after_refusal"] is shared
    app.close()


def test_a_namespaced_name_written_on_the_conf_is_that_setting(url: str) -> None:
    """As Celery: with ``namespace="CELERY"``, ``app.conf.CELERY_TASK_ALWAYS_EAGER = False`` (a
    shell, a test) changes ``task_always_eager``, over the Django-style setting."""
    app = Celery("prec", broker=url)
    app.config_from_object({"CELERY_TASK_ALWAYS_EAGER": True, "SECRET_KEY": "s"}, namespace="CELERY")
    try:
        assert app.conf.task_always_eager is True
        app.conf.CELERY_TASK_ALWAYS_EAGER = False
        assert app.conf.task_always_eager is False and app.conf.CELERY_TASK_ALWAYS_EAGER is False
        app.conf.update(CELERY_TASK_ALWAYS_EAGER=True)
        assert app.conf.task_always_eager is True
        assert app.conf.get("SECRET_KEY") == "s"  # not a setting: read as the project wrote it
        # django-celery-results reads result_extended this way
        assert app.conf.find_value_for_key("always_eager", "task") is True
        with pytest.raises(KeyError):
            app.conf.find_value_for_key("nothing", "result")
    finally:
        app.close()


def test_settings_shown_never_hold_a_secret(url: str) -> None:
    """``inspect conf`` and ``conf.humanize()`` mask what Celery masks: secret-looking names
    (Django's SECRET_KEY, a DATABASES password) and the password of a URL."""
    from celery.app.utils import filter_hidden_settings

    settings = {
        "SECRET_KEY": "s3cret",
        "DATABASES": {"default": {"PASSWORD": "dbpw", "HOST": "db"}},
        "CELERY_RESULT_BACKEND": "redis://user:redispw@cache/1",
        "CELERY_TASK_DEFAULT_QUEUE": "jobs",
    }
    shown = filter_hidden_settings(settings)
    assert shown["SECRET_KEY"] == "********" and shown["DATABASES"]["default"] == {
        "PASSWORD": "********",
        "HOST": "db",
    }
    assert "redispw" not in shown["CELERY_RESULT_BACKEND"] and shown["CELERY_TASK_DEFAULT_QUEUE"] == "jobs"
    app = Celery("shown", broker=url)
    app.config_from_object(settings, namespace="CELERY")
    try:
        text = app.conf.humanize()
        assert "task_default_queue: 'jobs'" in text
        assert not any(secret in text for secret in ("s3cret", "dbpw", "redispw"))
        # Celery's keywords (a TypeError here before): censored by default, table() too
        table = app.conf.table(with_defaults=False, censored=True)
        assert table["result_backend"] == "redis://user:***@cache/1"  # Celery: 8 stars and :6379
        assert app.conf.table()["result_backend"] == table["result_backend"]
        assert "redispw" in app.conf.table(censored=False)["result_backend"]
        assert "redispw" in app.conf.humanize(with_defaults=False, censored=False)
        assert dict(app.conf.iteritems())["result_backend"] == "redis://user:redispw@cache/1"
    finally:
        app.close()


def test_names_libraries_import_from_celery() -> None:
    """pytest-celery imports PendingConfiguration; celery-progress reads a backend's states."""
    from celery.app.base import PendingConfiguration
    from celery.backends.base import DisabledBackend

    assert isinstance(PendingConfiguration(), dict)
    assert frozenset({"SUCCESS", "FAILURE", "REVOKED"}) == DisabledBackend.READY_STATES
    assert "RETRY" in DisabledBackend.EXCEPTION_STATES


def test_celery_config_module_configures_until_config_from_object_replaces_it(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("CELERY_CONFIG_MODULE", "tests.compat.apps.acks_config")
    app = Celery("from_env", broker=url)
    assert app.conf.task_acks_late is True and app.conf.task_default_rate_limit == "5/s"
    app.conf.task_default_rate_limit = "1/s"  # set on the conf: above every module
    app.config_from_object({"task_track_started": True})
    assert app.conf.task_acks_late is False and app.conf.task_track_started is True
    assert app.conf.task_default_rate_limit == "1/s"
    monkeypatch.setenv("CELERY_CONFIG_MODULE", "tests.compat.apps.no_such_config")
    cannot = r"CELERY_CONFIG_MODULE .* names 'tests\.compat\.apps\.no_such_config'"
    with pytest.raises(ImportError, match=cannot):
        Celery("missing", broker=url)
    app.close()


def test_the_conf_a_worker_reports_is_json_with_secrets_masked(url: str) -> None:
    import datetime as dt
    import json

    from pgtasks.compat.bridge.worker_start import report_conf

    app = Celery("reported", broker=url)
    looped: list[object] = [1]
    looped.append(looped)
    app.conf.update(
        broker_transport_options={"visibility_timeout": float("inf")},
        result_expires=dt.timedelta(hours=1),
        accept_content={"json"},
        task_routes=[lambda *a, **k: None],
        custom_api_key="s3cret",
        database_url_extra="postgresql://u:hunter2@db/x",
        looped=looped,
    )
    shown = report_conf(app)
    text = json.dumps(shown, allow_nan=False)  # strict JSON: no inf or nan
    assert "s3cret" not in text and "hunter2" not in text
    assert shown["broker_transport_options"] == {"visibility_timeout": "inf"}
    assert shown["result_expires"] == "1:00:00" and shown["accept_content"] == ["json"]
    assert shown["task_routes"][0].startswith("<function") and "task_default_queue" not in shown
    app.close()


def test_namespace_and_timezone_are_celerys(url: str) -> None:
    # django-celery-beat reads settings.{app.namespace}_TIMEZONE and datetime.now(app.timezone).
    app = Celery("tz", broker=url)
    assert app.timezone == zoneinfo.ZoneInfo("UTC") and app.namespace is None
    app.config_from_object(types.SimpleNamespace(CELERY_TIMEZONE="Asia/Tokyo"), namespace="CELERY")
    assert app.namespace == "CELERY"
    assert app.timezone == zoneinfo.ZoneInfo("Asia/Tokyo") and app.zone_name == "Asia/Tokyo"
    assert dt.datetime.now(app.timezone).utcoffset() == dt.timedelta(hours=9)
    app.conf.timezone = zoneinfo.ZoneInfo("Europe/Paris")  # a tzinfo is taken too, as Celery
    assert app.timezone.key == "Europe/Paris" and app.zone_name == "Europe/Paris"
    local = Celery("local", broker=url, enable_utc=False)
    new_year = dt.datetime(2026, 1, 1)
    assert local.timezone.utcoffset(new_year) == new_year.astimezone().utcoffset()
