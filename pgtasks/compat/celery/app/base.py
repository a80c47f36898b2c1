"""Celery's ``celery.app.base``: :class:`Celery`, the application object, a
:class:`pgtasks.App` configured the Celery way.

How its settings become the engine's (``broker_url`` names the pgtasks database) is
bridge/configuration.py; sending, planning, eager runs and the result backend are the bridge's
too, called from here.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import os
import uuid
from collections.abc import Callable
from typing import Any, overload

from pgtasks.app import App
from pgtasks.compat.bridge import django_beat, django_support, registration
from pgtasks.compat.bridge.backend import DatabaseBackend
from pgtasks.compat.bridge.beat_schedule import add_entry, definitions_for_app
from pgtasks.compat.bridge.command_line import run_command
from pgtasks.compat.bridge.configuration import (
    ENGINE_SETTINGS,
    database_url,
    engine_settings,
    read_on_first_use,
)
from pgtasks.compat.bridge.eager import apply_eagerly
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.planning import send_canvas
from pgtasks.compat.bridge.sending import handed_back, send_task, send_task_async
from pgtasks.compat.celery import _state
from pgtasks.compat.celery.app.attributes import AppAttributesMixin
from pgtasks.compat.celery.app.autoretry import add_autoretry_behaviour
from pgtasks.compat.celery.app.builtins import register_builtins
from pgtasks.compat.celery.app.components import AppComponents
from pgtasks.compat.celery.app.connections import ConnectionsMixin
from pgtasks.compat.celery.app.control import Control
from pgtasks.compat.celery.app.registry import TaskRegistry
from pgtasks.compat.celery.app.routes import RouterFunction, prepare_routers
from pgtasks.compat.celery.app.task import Task
from pgtasks.compat.celery.app.utils import Settings, attributes_of, current_name, settings_from_mapping
from pgtasks.compat.celery.canvas.signature import Signature, signature
from pgtasks.compat.celery.exceptions import ChordError, ImproperlyConfigured, TaskRevokedError
from pgtasks.compat.celery.loaders.base import BaseLoader, get_loader_cls, module_names
from pgtasks.compat.celery.result.async_result import AsyncResult
from pgtasks.compat.celery.result.eager_result import EagerResult
from pgtasks.compat.celery.result.group_result import GroupResult
from pgtasks.compat.celery.result.result_set import ResultSet
from pgtasks.compat.celery.utils.dispatch.signal import Signal
from pgtasks.compat.celery.utils.time import timezone as tz
from pgtasks.compat.kombu.utils.imports import symbol_by_name
from pgtasks.engine.core import Engine
from pgtasks.engine.registry import TaskDefinition
from pgtasks.scheduler.definitions import ScheduleDefinition
from pgtasks.scheduler.live import LiveSource

__all__ = ["Celery", "PendingConfiguration"]


class PendingConfiguration(dict):  # type: ignore[type-arg]
    """Celery's configuration not read yet. pgtasks' ``app.conf`` reads its sources at each
    lookup and is never pending: the class exists for libraries that check for it
    (pytest-celery imports it)."""


CeleryTask = Task  # inside Celery, ``Task`` is the property below


class Celery(App, ConnectionsMixin, AppAttributesMixin, AppComponents):
    """A Celery application running on pgtasks (see the module docstring)."""

    def __init__(
        self,
        main: str | None = None,
        loader: Any = None,
        backend: Any = None,
        amqp: Any = None,
        events: Any = None,
        log: Any = None,
        control: Any = None,
        set_as_current: bool = True,
        tasks: Any = None,
        broker: str | None = None,
        include: Any = None,
        changes: dict[str, Any] | None = None,
        config_source: Any = None,
        fixups: Any = None,
        task_cls: type[Task] | str | None = None,
        autofinalize: bool = True,
        namespace: str | None = None,
        strict_typing: bool = True,
        **kwargs: Any,
    ) -> None:
        self._ready = False
        self._engine_stale = False
        self.conf = Settings(on_change=self._conf_changed)
        self.namespace = namespace
        self.autofinalize = autofinalize
        self.strict_typing = strict_typing
        self.task_cls: type[Task] = (
            symbol_by_name(task_cls) if isinstance(task_cls, str) else (task_cls or Task)
        )
        self._loader_cls = loader or "app"
        self._registry = TaskRegistry()
        self._autodiscover: list[tuple[Any, str]] = []
        self._finalized = False
        self._routers: tuple[Any, list[RouterFunction]] | None = None
        self.on_configure = Signal("app.on_configure")
        self.on_after_configure = Signal("app.on_after_configure")
        self.on_after_finalize = Signal("app.on_after_finalize")
        self.on_after_fork = Signal("app.on_after_fork")
        preconf = dict(changes or {})
        for key, value in (("broker_url", broker), ("result_backend", backend), ("include", include)):
            if value is not None:
                preconf[key] = value
        preconf.update(kwargs)
        # As Celery: old and new names may be mixed here (broker= is broker_url, beside an old
        # CELERY_ALWAYS_EAGER=True), unlike in one configuration source.
        self.conf.load({current_name(key): value for key, value in preconf.items()})
        # As Celery's loaders: the module CELERY_CONFIG_MODULE names (`celery --config`) is the
        # app's configuration until config_from_object gives another.
        self._env_config = os.environ.get("CELERY_CONFIG_MODULE") or None
        if self._env_config:
            try:
                module = importlib.import_module(self._env_config)
            except ImportError as exc:
                raise ImportError(
                    f"CELERY_CONFIG_MODULE (celery --config) names {self._env_config!r}, which cannot "
                    f"be imported: {exc}"
                ) from exc
            self.conf.add_source(module, None)
        super().__init__(
            main, database_url=database_url(self.conf), default_queue=self.conf.task_default_queue
        )
        # What a chord body whose header failed raises: Celery's ChordError (naming a revoked
        # header task's TaskRevokedError), fixed for the engine.
        self.engine = self.engine.with_chord_error(ChordError, TaskRevokedError)
        self._ready = True
        self._conf_changed(set(ENGINE_SETTINGS))
        if config_source is not None:
            self.config_from_object(config_source)
        self.control = Control(self)
        self.add_schedule_source(self._beat_schedule_definitions)
        parts = {"loader": loader, "log": log, "control": control, "events": events, "amqp": amqp}
        self._init_attributes(set_as_current, fixups, parts)
        self.on_init()
        registration.app_created(self, set_as_current)

    def __repr__(self) -> str:
        return f"<Celery {self.main or '__main__'} on pgtasks>"

    # -- configuration -------------------------------------------------------------------
    @property
    def engine(self) -> Engine:
        """The engine, rebuilt from the settings on first use after they changed."""
        if self._engine_stale:
            self._engine_stale = False
            self._rebuild_engine()
        return self._engine

    @engine.setter
    def engine(self, value: Engine) -> None:
        self._engine = value

    def close(self) -> None:
        """Close the database connections (of the engine as it is: no settings are read)."""
        self._engine_stale = False
        super().close()

    # Celery's app.timezone is a tzinfo (django-celery-beat computes datetime.now(app.timezone));
    # pgtasks' App keeps a zone name there, which zone_name gives for a Celery app.
    @property  # type: ignore[override]
    def timezone(self) -> dt.tzinfo:
        """The ``timezone`` setting as a tzinfo, as Celery's: UTC when unset (the system's
        local zone when ``enable_utc`` is False too)."""
        zone = self.conf.timezone
        if not zone:
            return tz.utc if flag("enable_utc", self.conf.enable_utc) else tz.local
        return tz.get_timezone(zone)

    @timezone.setter
    def timezone(self, value: str | dt.tzinfo) -> None:
        self.conf.timezone = value

    @property
    def zone_name(self) -> str:
        """The name of the ``timezone`` setting (UTC when unset): the default zone of the
        app's schedules."""
        return str(self.conf.timezone or "UTC")

    def _conf_changed(self, names: set[str]) -> None:
        if not self._ready:
            return
        if names & ENGINE_SETTINGS:
            self._engine_stale = True  # rebuilt when next used: a source is not read before
        if "broker_url" in names and dict.__contains__(self.conf, "broker_url"):
            database_url(self.conf)  # a message broker's URL set here is refused at once
        if "task_routes" in names:
            self._routers = None

    def _rebuild_engine(self) -> None:
        settings = engine_settings(self.conf, self._engine.settings)
        previous, self._engine = self._engine, self._engine.with_settings(settings)
        if settings.database_url != previous.settings.database_url:
            previous.close()  # the new engine opens its own connections on the new database

    def config_from_object(
        self, obj: Any, silent: bool = False, force: bool = False, namespace: str | None = None
    ) -> None:
        """Read settings from an object, a module or an import path (``'proj.settings'``,
        ``'django.conf:settings'``); with ``namespace='CELERY'`` only ``CELERY_`` names."""
        namespace = namespace if namespace is not None else self.namespace
        if isinstance(obj, str):
            try:
                obj = symbol_by_name(obj)  # imports the module; reads no setting yet
            except (ImportError, AttributeError):
                if silent:
                    return
                raise
        if not namespace and not read_on_first_use(obj):
            settings_from_mapping(attributes_of(obj), None)  # old and new names mixed: refused now
        if self._env_config:  # the configuration given replaces CELERY_CONFIG_MODULE's
            self.conf.remove_first_source()
            self._env_config = None
        # Read at each lookup, as Celery does: a setting changed on the object later (a test's
        # settings fixture) takes effect, and Django's settings are not read before first use.
        self.conf.add_source(obj, namespace)
        self.namespace = namespace  # read by libraries (django-celery-beat: f"{namespace}_TIMEZONE")

    def config_from_envvar(
        self, variable_name: str, silent: bool = False, force: bool = False
    ) -> bool | None:
        """``config_from_object`` of the module named by an environment variable; False when
        it is not set and ``silent``, else None, as in Celery."""
        module_name = os.environ.get(variable_name)
        if not module_name:
            if silent:
                return False
            raise ImproperlyConfigured(
                f"The environment variable {variable_name!r} is not set, so the configuration could not "
                f"be loaded: set it to the configuration module's name ({variable_name}=proj.celeryconfig)"
            )
        self.config_from_object(module_name, silent=silent, force=force)
        return None

    def add_defaults(self, fun: Any) -> None:
        """Defaults below every other setting (a callable is called for them)."""
        values = fun() if callable(fun) else fun
        self.conf.add_defaults(attributes_of(values))

    @property
    def routers(self) -> list[RouterFunction]:
        """``task_routes`` prepared (recomputed when the setting changes)."""
        routes = self.conf.task_routes
        if self._routers is None or self._routers[0] is not routes:
            self._routers = (routes, prepare_routers(routes))
        return self._routers[1]

    @property
    def beat_schedule(self) -> dict[str, dict[str, Any]]:
        """``conf.beat_schedule`` itself, so changes in place are seen."""
        schedule = self.conf.beat_schedule
        if schedule is None:
            self.conf["beat_schedule"] = schedule = {}
        return schedule  # type: ignore[no-any-return]

    @beat_schedule.setter
    def beat_schedule(self, value: dict[str, dict[str, Any]]) -> None:
        self.conf["beat_schedule"] = dict(value)

    def add_periodic_task(
        self, schedule: Any, sig: Any, args: Any = (), kwargs: Any = (), name: str | None = None, **opts: Any
    ) -> str:
        """Celery's ``app.add_periodic_task``: adds an entry to ``beat_schedule``; returns its key."""
        return add_entry(self.beat_schedule, schedule, sig, args, kwargs, name, opts)

    def live_schedule_sources(self) -> list[LiveSource]:
        """django-celery-beat's periodic tasks when ``beat_scheduler`` is its DatabaseScheduler
        (see :mod:`pgtasks.compat.bridge.django_beat`)."""
        return [django_beat.live_source(self)] if django_beat.uses_django_beat(self) else []

    def _beat_schedule_definitions(self) -> list[ScheduleDefinition]:
        """This app's schedule source: ``beat_schedule``, each entry routed by ``task_routes``
        when its options name no queue. None with django-celery-beat's DatabaseScheduler,
        which writes the entries as its rows (they fire from there, once)."""
        self.finalize()
        return [] if django_beat.uses_django_beat(self) else definitions_for_app(self)

    # -- tasks ---------------------------------------------------------------------------
    @property
    def Task(self) -> type[Task]:
        """The base class of this app's tasks."""
        return self.task_cls

    @Task.setter
    def Task(self, cls: type[Task]) -> None:
        """``app.Task = ContextTask`` (Flask's pattern): the base of the tasks defined from now
        on, and, until the app is finalized, of those defined before without a base of their
        own, as Celery creates those lazily from the app's Task when it finalizes."""
        previous, self.task_cls = self.task_cls, cls
        if self._finalized or not issubclass(cls, previous):
            return
        for task in list(self._registry.values()):
            made = type(task)
            if getattr(task, "_decorated", False) and made.__bases__ == (previous,):
                made.__bases__ = (cls,)

    @property
    def tasks(self) -> TaskRegistry:
        """Tasks by name (importing ``include`` and autodiscovered modules first)."""
        if self.autofinalize:
            self.finalize()
        return self._registry

    # Celery's API: Celery's Task, not pgtasks' (hence [override]).
    @overload  # type: ignore[override]
    def task(self, fun: Callable[..., Any], /) -> CeleryTask: ...
    @overload
    def task(self, /, **opts: Any) -> Callable[[Callable[..., Any]], CeleryTask]: ...

    def task(self, /, *args: Any, **opts: Any) -> CeleryTask | Callable[[Callable[..., Any]], CeleryTask]:
        """``@app.task`` or ``@app.task(name=, bind=, base=, max_retries=, ...)``. As Celery's
        (``shared=True``), every Celery app finalized later makes its own task of the function
        too (bound to it, named and based by it); ``shared=False`` keeps it to this app."""

        def create(fun: Callable[..., Any]) -> Task:
            options = dict(opts)
            shared = options.pop("shared", True)
            task = self._task_from_fun(fun, options, replace=True)
            if shared:  # only once made here: a declaration refused here is refused everywhere
                registration.share_with_apps_finalized_later(fun, options)
            return task

        if len(args) == 1 and callable(args[0]) and not opts:
            return create(args[0])
        if args:
            raise TypeError("@task() takes exactly 1 argument")
        return create

    def _task_from_fun(self, fun: Callable[..., Any], opts: dict[str, Any], replace: bool) -> CeleryTask:
        """This app's task of ``fun`` made with ``@app.task``'s options, registered. A task
        of that name already here is kept if it wraps ``fun``, or if not ``replace`` (another
        app's shared task never takes the place of one this app has)."""
        options = dict(opts)
        base = options.pop("base", None) or self.task_cls
        bind = options.pop("bind", False)
        for ignored in ("shared", "lazy", "filter"):
            options.pop(ignored, None)
        name = options.pop("name", None) or self.gen_task_name(fun.__name__, fun.__module__)
        existing = self._registry.get(name)
        if existing is not None and (not replace or getattr(existing, "__wrapped__", None) is fun):
            return existing  # type: ignore[no-any-return]
        task = registration.make_task(fun, self, base, name, bind, **options)
        self.register_task(task)
        return task

    def gen_task_name(self, name: str, module: str) -> str:
        return registration.gen_task_name(self.main, name, module)

    def register_task(self, task: Any, **options: Any) -> Any:
        """Register a Task instance (or class) with this app and with the engine."""
        if isinstance(task, type):
            task = task()
        if not task.name:
            task.name = self.gen_task_name(type(task).__name__, type(task).__module__)
        if "__name__" not in vars(task):  # a class-based task looks like its class
            task.__name__ = type(task).__name__
            task.__qualname__ = type(task).__qualname__
        if task.typing is None:  # Celery's Task.bind: the task's argument check follows the app's
            task.typing = self.strict_typing
        if not getattr(task, "_decorated", False) and "run" not in vars(task):
            # As Celery's register_task: autoretry_for works on class-based tasks too.
            add_autoretry_behaviour(task)
        self._registry[task.name] = task
        if self._finalized:
            task.annotate()  # the app's task_annotations, as for the tasks it was finalized with
        self._define(task)
        return task

    def _define(self, task: CeleryTask) -> None:
        """Register ``task`` with the engine: its body, queue and limits as they are now."""
        # The engine as it is, not rebuilt from changed settings: its registry and recovery
        # limit are every rebuilt engine's, and registering a (shared) task must not read the
        # settings, which may name a broker pgtasks refuses when it next builds the engine.
        engine = self._engine
        registration.warn_unusable_limits(task)
        definition = TaskDefinition(
            name=str(task.name),
            fn=registration.engine_entry(task),
            queue=task.queue,
            max_recovery_attempts=engine.settings.max_recovery_attempts,
            options={
                "time_limit": task.time_limit,
                "soft_time_limit": task.soft_time_limit,
                "rate_limit": task.rate_limit,
                "celery": True,
            },
        )
        engine.registry.add(definition)

    def finalize(self, auto: bool = False) -> None:
        """Import ``include``/``imports`` and autodiscovered modules, once; apply
        ``task_annotations`` to the tasks; then send ``on_after_configure`` and
        ``on_after_finalize``."""
        if self._finalized:
            return
        self._finalized = True
        register_builtins(self)
        self.on_configure.send(sender=self)
        for module in [*module_names(self.conf.include), *module_names(self.conf.imports)]:
            importlib.import_module(module)
        self._import_autodiscovered()
        for fun, options in registration.shared_with_this_app():
            self._task_from_fun(fun, options, replace=False)
        if self.annotations:
            for task in list(self._registry.values()):
                task.annotate()
                self._define(task)
        self.on_after_configure.send(sender=self, source=self.conf)
        self.on_after_finalize.send(sender=self)

    def autodiscover_tasks(
        self, packages: Any = None, related_name: str = "tasks", force: bool = False
    ) -> None:
        """Import ``<package>.<related_name>`` for each package (Django: INSTALLED_APPS when
        none are given), at finalize or now with ``force``."""
        self._autodiscover.append((packages, related_name))
        if force or self._finalized:
            self._import_autodiscovered()

    def _import_autodiscovered(self) -> None:
        pending, self._autodiscover = self._autodiscover, []
        for packages, related_name in pending:
            if callable(packages):
                packages = packages()
            if packages is None:
                packages = django_support.installed_apps()
            for package in packages:
                target = f"{package}.{related_name}" if related_name else package
                try:
                    importlib.import_module(target)
                except ModuleNotFoundError as exc:
                    if exc.name not in (target, package):
                        raise

    # -- sending and results -------------------------------------------------------------
    def send_task(  # type: ignore[override]  # Celery's AsyncResult, not pgtasks'
        self, name: str, args: Any = None, kwargs: Any = None, **options: Any
    ) -> AsyncResult:
        """Send a task by name (Celery ignores ``task_always_eager`` here, and so does pgtasks).
        ``Task.apply_async`` sends through here, as Celery's does, with ``task_type`` (the task)
        and ``result_cls`` (the class of the handle returned)."""
        result_cls = options.pop("result_cls", None)
        task = options.pop("task_type", None) or self._registry.get(name)
        options = self._send_task_options(options)
        return handed_back(send_task(self, name, args, kwargs, task=task, **options), result_cls, options)

    async def send_task_async(
        self, name: str, args: Any = None, kwargs: Any = None, **options: Any
    ) -> AsyncResult:
        """:meth:`send_task` for async code (``conn=`` may be a ``psycopg.AsyncConnection``)."""
        options = self._send_task_options(options)
        return await send_task_async(self, name, args, kwargs, task=self._registry.get(name), **options)

    @staticmethod
    def _send_task_options(options: dict[str, Any]) -> dict[str, Any]:
        """Celery's send_task options that mean nothing here dropped, None values too."""
        ignored = (
            "producer",
            "connection",
            "router",
            "result_cls",
            "publisher",
            "add_to_parent",
            "route_name",
            "replaced_task_nesting",
        )
        return {
            k: v
            for k, v in options.items()
            if k not in ignored and (v is not None or k in ("link", "link_error"))
        }

    def check_task_arguments(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """As ``apply_async`` checks them: the task's ``check_arguments`` (nothing checked
        with ``typing=False``); what the dashboard asks before sending for Flower's API."""
        task = self.tasks.get(name)
        if task is not None:
            task.check_arguments(*args, **kwargs)

    def send_canvas(
        self, item: Signature, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> AsyncResult | GroupResult:
        """Plan a workflow (or a signature with callbacks) into linked tasks and insert them in
        one transaction; return its result handle. What ``chain``/``group``/``chord``
        ``.apply_async`` call (see bridge/planning.py)."""
        return send_canvas(self, item, args, kwargs)

    def apply_eagerly(
        self, task: CeleryTask, args: tuple[Any, ...], kwargs: dict[str, Any], **options: Any
    ) -> EagerResult:
        """Run ``task`` here, now, and return its EagerResult: what ``Task.apply`` calls (see
        bridge/eager.py; the app runs it because running a task is above the Task class)."""
        return apply_eagerly(task, args, kwargs, **options)

    @functools.cached_property
    def loader(self) -> BaseLoader:
        """``app.loader``: the loader ``Celery(loader=...)`` named (Celery's AppLoader by
        default; see :mod:`pgtasks.compat.celery.loaders.base`)."""
        loader: BaseLoader = get_loader_cls(self._loader_cls)(app=self)
        return loader

    @functools.cached_property
    def backend(self) -> DatabaseBackend:
        """Celery's result backend API over the app's own database (see bridge/backend.py)."""
        return DatabaseBackend(self)

    @functools.cached_property
    def AsyncResult(self) -> type[AsyncResult]:  # type: ignore[override]  # a class, as Celery's
        """Celery's ``app.AsyncResult``: the result class bound to this app, so
        ``app.AsyncResult(task_id)`` reads the task on this app and ``isinstance(r,
        app.AsyncResult)`` holds for what it made."""
        bound: type[AsyncResult] = self.subclass_with_self(AsyncResult)
        return bound

    @functools.cached_property
    def GroupResult(self) -> type[GroupResult]:
        """Celery's ``app.GroupResult``: the group result class bound to this app
        (``app.GroupResult(id, results)``, ``app.GroupResult.restore(id)``)."""
        bound: type[GroupResult] = self.subclass_with_self(GroupResult)
        return bound

    @functools.cached_property
    def ResultSet(self) -> type[ResultSet]:
        """Celery's ``app.ResultSet``: the result set class bound to this app."""
        bound: type[ResultSet] = self.subclass_with_self(ResultSet)
        return bound

    def signature(self, *args: Any, **kwargs: Any) -> Signature:
        kwargs["app"] = self
        return signature(*args, **kwargs)

    @property
    def current_task(self) -> Any:
        """The task running in this thread, or None (``app.current_task.request.id``)."""
        return _state.get_current_task()

    def set_current(self) -> None:
        _state.set_current_app(self)

    def set_default(self) -> None:
        _state.set_current_app(self)

    def now(self) -> dt.datetime:
        """Now, on the app's clock (``app.timezone``), as Celery's."""
        return dt.datetime.now(dt.timezone.utc).astimezone(self.timezone)

    def uuid(self) -> str:
        return str(uuid.uuid4())

    def start(self, argv: list[str] | None = None) -> int:
        """``app.start()``: the pgtasks command line with this app."""
        return run_command(self, argv)

    def worker_main(self, argv: list[str] | None = None) -> int:
        return run_command(self, ["worker", *(argv or [])[1 if argv and argv[0] == "worker" else 0 :]])


# What ``current_app`` gives when no app was created (Celery's default app).
_state.set_default_factory(lambda: Celery("default"))
