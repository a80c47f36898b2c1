"""The Celery app's smaller public attributes, as Celery documents them: where extensions
register (``steps``, ``user_options``, ``on_init``), what the app was built with, ids and
the Lamport clock, and the helpers on the app."""

from __future__ import annotations

import threading

import pytest
from celery import Celery, shared_task
from kombu import Connection
from kombu.clocks import LamportClock, timetuple


def test_extension_points_and_construction(sqlite_url: str) -> None:
    seen: list[str] = []

    class Hooked(Celery):
        def on_init(self) -> None:
            seen.append(self.main)

    app = Hooked("hooked", broker=sqlite_url, set_as_current=False, fixups=[], log="my.log:Logging")
    assert seen == ["hooked"] and app.set_as_current is False and app.fixups == set()
    assert app.log_cls == "my.log:Logging" and app.loader_cls == "celery.loaders.app:AppLoader"
    assert app.builtin_fixups == frozenset({"celery.fixups.django:fixup"})
    assert Celery("plain", broker=sqlite_url).fixups == {"celery.fixups.django:fixup"}
    app.steps["worker"].add(object)
    app.user_options["preload"].add("--template")
    assert app.steps["worker"] == {object} and app.steps["consumer"] == set()
    assert app.user_options["preload"] == {"--template"}
    assert app.configured and not app.finalized
    app.finalize()
    assert app.finalized
    assert app.SYSTEM and app.IS_WINDOWS is False and isinstance(app.IS_macOS, bool)
    assert "pgtasks" in app.bugreport() and app.use_fast_trace_task is False
    import celery

    assert celery.VERSION.major == 5 and celery.VERSION >= (5, 0) and celery.bugreport(app) == app.bugreport()
    assert celery.VERSION_BANNER.startswith(celery.__version__)
    assert app.bugreport().startswith(f"software -> celery:{celery.VERSION_BANNER} pgtasks:")
    assert isinstance(app.connection(), Connection)


def test_ids_clock_and_helpers(sqlite_url: str) -> None:
    app = Celery("helpers", broker=sqlite_url, timezone="Europe/Paris")
    assert app.oid == app.oid and app.oid != Celery("other", broker=sqlite_url).oid
    other: list[str] = []
    thread = threading.Thread(target=lambda: other.append(app.thread_oid))
    thread.start()
    thread.join()
    assert app.thread_oid == app.thread_oid and other[0] != app.thread_oid
    assert isinstance(app.clock, LamportClock) and app.clock.forward() == 1
    assert app.clock.adjust(10) == 11 and str(app.clock) == "11"
    assert timetuple(1, 2.0, "h:1").clock == 1
    assert not app.uses_utc_timezone() and Celery("utc", broker=sqlite_url).uses_utc_timezone()
    assert app.either("task_default_queue", None, "given") == "given"
    assert app.either("task_default_queue", None) == "celery"
    assert app.prepare_config({"a": 1}) == {"a": 1}
    app.config_from_cmdline(["task_default_queue=fromcli", ".worker_concurrency=(int)3"])
    assert app.conf.task_default_queue == "fromcli"

    class Thing:
        app = None

    bound = app.subclass_with_self(Thing, name="BoundThing")
    assert bound.__name__ == "BoundThing" and bound.app is app and issubclass(bound, Thing)
    base = app.create_task_cls()
    assert issubclass(base, app.Task) and base._app is app and base.abstract is True

    def add(x: int, y: int = 0) -> int:
        return x + y

    check = app.type_checker(add)
    check(1, y=2)
    with pytest.raises(TypeError):
        check(1, 2, 3)
    app.type_checker(lambda self, x: x, bound=True)(5)


def test_current_worker_task_is_none_when_called_directly(sqlite_url: str) -> None:
    app = Celery("current", broker=sqlite_url)
    app.conf.task_always_eager = True
    seen: list[object] = []

    @app.task(name="current.inner")
    def inner() -> None:
        seen.append(app.current_worker_task)

    @app.task(name="current.outer")
    def outer() -> None:
        inner()  # called directly inside: the worker's task is still outer
        seen.append(app.current_worker_task)

    outer.apply()
    inner()
    assert seen == [outer, outer, None]


def test_conf_derived_settings_and_lookups(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app = Celery("conf", broker=sqlite_url)
    conf = app.conf
    assert conf.broker_read_url == conf.broker_write_url == conf.broker_url == sqlite_url
    assert conf.task_default_exchange == conf.task_default_routing_key == "celery"
    conf.task_default_queue = "jobs"
    assert conf.task_default_exchange == "jobs" and conf["task_default_exchange"] is None
    monkeypatch.setenv("CELERY_RESULT_BACKEND", "db+postgresql://x")
    assert conf.result_backend == "db+postgresql://x"
    found = conf.find_option("always_eager")
    assert (found.namespace, found.key, found.type.type, found.type.default) == (
        "task",
        "always_eager",
        "bool",
        False,
    )
    assert conf.find_option("enable_utc").namespace is None
    assert conf.find_option("default_queue", namespace="task").key == "default_queue"
    with pytest.raises(KeyError):
        conf.find_option("no_such_setting_anywhere")
    assert conf.get_by_parts("task", "default", "queue") == "jobs"
    assert conf.value_set_for("task_default_queue") and not conf.value_set_for("worker_concurrency")
    assert conf.without_defaults() == {"broker_url": sqlite_url, "task_default_queue": "jobs"}
    assert "worker_concurrency" in dict(conf.iteritems()) and len(conf.maps) == 3


def test_the_version_is_the_celery_release_whose_api_the_layer_follows() -> None:
    """Celery 5.7's, as the reference interpreter has it: ``celery.VERSION >= (5, 7)`` checks
    take the paths of the API pgtasks follows; the banner names pgtasks as the series."""
    import subprocess

    import celery

    from tests.support.redis import celery_python

    script = "import celery; print(celery.__version__, tuple(celery.VERSION), celery.version_info_t._fields)"
    done = subprocess.run([str(celery_python()), "-c", script], capture_output=True, text=True, check=True)
    ours = f"{celery.__version__} {tuple(celery.VERSION)} {celery.version_info_t._fields}"
    assert ours == done.stdout.strip()
    assert celery.VERSION == celery.version_info_t(5, 7, 0, "", "") == celery.version_info
    assert celery.VERSION >= (5, 7) and celery.VERSION_BANNER == "5.7.0 (pgtasks)"


def test_a_shared_task_takes_the_task_class_of_the_current_app(sqlite_url: str) -> None:
    """testdrivenio's flask-celery-project sets ``current_app.Task = AppContextTask`` and
    defines its tasks with ``@shared_task``: on Celery they run in the Flask app context; here
    they were made from the plain Task, so a task reading the database failed in the worker
    with "Working outside of application context"."""
    app = Celery("flaskish", broker=sqlite_url)
    calls: list[str] = []

    class AppContextTask(app.Task):  # type: ignore[name-defined,misc]
        def __call__(self, *args: object, **kwargs: object) -> object:
            calls.append(self.name)
            return self.run(*args, **kwargs)

    app.Task = AppContextTask

    @shared_task
    def welcome(user: str) -> str:
        return f"hello {user}"

    assert isinstance(welcome, AppContextTask)
    assert welcome("ann") == "hello ann" and calls == [welcome.name]
    app.conf.task_always_eager = True
    assert welcome.delay("bob").get() == "hello bob" and calls == [welcome.name] * 2
    app.close()


def test_assigning_app_task_sets_the_base_of_its_tasks(sqlite_url: str) -> None:
    """``celery.Task = ContextTask``, Flask's pattern (cookiecutter-flask-restful's
    ``init_celery``): the base of the tasks defined after it, and of those defined before it
    while the app is not finalized, as Celery creates them from the app's Task when it
    finalizes. It was "property 'Task' of 'Celery' object has no setter"."""
    app = Celery("ctx", broker=sqlite_url)
    calls: list[str] = []

    @app.task
    def before() -> str:
        return "before"

    class ContextTask(app.Task):  # type: ignore[name-defined,misc]
        def __call__(self, *args: object, **kwargs: object) -> object:
            calls.append(self.name)
            return self.run(*args, **kwargs)

    app.Task = ContextTask

    @app.task
    def after() -> str:
        return "after"

    assert app.Task is ContextTask and isinstance(before, ContextTask) and isinstance(after, ContextTask)
    assert (before(), after()) == ("before", "after") and calls == [before.name, after.name]
    app.finalize()

    class Later(ContextTask):
        pass

    app.Task = Later  # once finalized, the tasks made keep their base, as in Celery
    assert not isinstance(before, Later) and app.Task is Later
    app.close()
