"""``app.loader`` as Celery has it (``celery.loaders``): what django-celery-beat's admin and
projects' own tests call on it. The worker calling a custom loader's hooks is in
test_worker_signals.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery
from celery.loaders import get_loader_cls
from celery.loaders.app import AppLoader
from celery.loaders.base import BaseLoader
from celery.loaders.default import Loader
from celery.signals import import_modules


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package with a tasks module and a settings module, importable from the cwd."""
    package = tmp_path / "loaderproj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tasks.py").write_text(
        "from celery import shared_task\n\n"
        "@shared_task(name='loaderproj.ping')\ndef ping():\n    return 'pong'\n"
    )
    (package / "settings.py").write_text("broker_url = 'memory://'\ntask_default_queue = 'side'\n")
    monkeypatch.chdir(tmp_path)  # the loader imports configuration modules from the cwd
    monkeypatch.syspath_prepend(str(tmp_path))  # as `celery -A` puts the project on the path
    yield package
    for name in [n for n in sys.modules if n.startswith("loaderproj")]:
        del sys.modules[name]


def test_the_loader_of_an_app_is_celerys_app_loader(tmp_path: Path) -> None:
    app = Celery("loaded", broker=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    try:
        assert isinstance(app.loader, AppLoader) and isinstance(app.loader, BaseLoader)
        assert app.loader is app.loader and app.loader.app is app
        assert get_loader_cls("app") is AppLoader and get_loader_cls("default") is Loader
        assert get_loader_cls("celery.loaders.default:Loader") is Loader
        assert app.loader.now().tzinfo is not None and app.loader.now(utc=False).tzinfo is None
        assert app.loader.configured is False and app.loader.worker_initialized is False
        assert app.loader.read_configuration() is None and app.loader.conf is None
        parsed = app.loader.cmdline_config_parser(
            [
                "task_default_queue=x",
                "worker_concurrency=4",
                "task_always_eager=yes",
                ".foo=(int)3",
                "x_y=(json)[1]",
            ]
        )
        assert parsed == {
            "task_default_queue": "x",
            "worker_concurrency": "4",  # as Celery: a string unless cast
            "task_always_eager": True,
            "celery_foo": 3,
            "x_y": [1],
        }
        with pytest.raises(ValueError, match="'task_acks_late': not a boolean: 'maybe'"):
            app.loader.cmdline_config_parser(["task_acks_late=maybe"])
        with pytest.raises(ValueError, match="name=value"):
            app.loader.cmdline_config_parser(["task_acks_late"])
    finally:
        app.close()


def test_import_default_modules_imports_what_the_worker_imports(project: Path, tmp_path: Path) -> None:
    """django-celery-beat's admin calls it before listing ``app.tasks``; projects' tests call it
    to check that every beat_schedule entry names a registered task."""
    app = Celery("loaded", broker=f"sqlite:///{tmp_path / 'db.sqlite3'}", include=["json"])
    seen: list[object] = []

    def receiver(sender: object = None, **kwargs: object) -> None:
        seen.append(sender)

    import_modules.connect(receiver)
    try:
        app.autodiscover_tasks(["loaderproj"])
        assert app.loader.default_modules == ("json",)
        imported = app.loader.import_default_modules()
        assert [m.__name__ for m in imported] == ["json"] and seen == [app]
        assert "loaderproj.ping" in app.tasks and "json" in app.loader.task_modules
        app.loader.autodiscover_tasks(["loaderproj", "json"])
        assert "loaderproj.tasks" in app.loader.task_modules

        def failing(sender: object = None, **kwargs: object) -> Exception:
            return RuntimeError("a receiver failed")

        import_modules.connect(failing)
        with pytest.raises(RuntimeError, match="a receiver failed"):
            app.loader.import_default_modules()
        import_modules.disconnect(failing)
    finally:
        import_modules.disconnect(receiver)
        app.close()


def test_configuration_modules(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = Celery("loaded", broker=f"sqlite:///{tmp_path / 'db.sqlite3'}", loader="default")
    try:
        assert isinstance(app.loader, Loader)
        assert dict(app.loader.conf) == {} and app.loader.configured is False  # no celeryconfig
        monkeypatch.setenv("CELERY_CONFIG_MODULE", "loaderproj.settings")
        fresh = Loader(app)
        assert fresh.conf["task_default_queue"] == "side" and fresh.configured is True
        assert AppLoader(app).read_configuration()["broker_url"] == "memory://"
        assert fresh.config_from_object("loaderproj.settings") is True
        assert fresh.config_from_object("loaderproj.nowhere", silent=True) is False
        with pytest.raises(ImportError):
            fresh.config_from_object("loaderproj.nowhere")
        monkeypatch.setenv("CELERY_CONFIG_MODULE", "loaderproj.settings.py")
        with pytest.raises(Exception, match="file name: name the configuration module as it is imported"):
            AppLoader(app).read_configuration()
    finally:
        app.close()


def test_include_and_imports_given_as_one_name_are_that_module(tmp_path: Path) -> None:
    """Celery reads them with ``maybe_list``: ``Celery(include='proj.tasks')`` imports
    proj.tasks; the app's finalize read it letter by letter (No module named 'p'), so
    ``app.tasks`` and every worker of such an app failed."""
    app = Celery("loaded", broker=f"sqlite:///{tmp_path / 'db.sqlite3'}", include="json")
    app.conf.imports = "html.parser"
    try:
        assert "celery.chain" in app.tasks  # finalized: include and imports imported
        assert app.loader.default_modules == ("html.parser", "json")
    finally:
        app.close()
