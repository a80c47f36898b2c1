"""Celery's ``celery.loaders.base``: :class:`BaseLoader`, what ``app.loader`` is.

The loader imports an app's task modules (``import_default_modules``: the ``import_modules``
signal, which is how ``app.autodiscover_tasks()`` packages are imported, then ``imports`` and
``include``), reads an extra configuration module (``read_configuration``) and parses
``name=value`` settings given on a command line (``cmdline_config_parser``). pgtasks' worker
calls its hooks where Celery's does: ``init_worker`` once at start (imports, then
``on_worker_init``), ``init_worker_process`` in each prefork child, ``on_task_init`` and
``on_process_cleanup`` around every task, ``shutdown_worker`` at stop; a custom loader
(``Celery(loader=MyLoader)``) overrides the ``on_*`` methods.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import importlib.util
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.defaults import DEFAULTS
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.compat.celery.utils.collections import DictAttribute
from pgtasks.compat.celery.utils.imports import import_from_cwd
from pgtasks.compat.kombu.utils.imports import symbol_by_name

__all__ = [
    "LOADER_ALIASES",
    "BaseLoader",
    "ModuleSettings",
    "autodiscover_tasks",
    "find_related_module",
    "get_loader_cls",
]

# The loaders ``Celery(loader=...)`` names by alias (celery.loaders re-exports these).
LOADER_ALIASES = {
    "app": "pgtasks.compat.celery.loaders.app:AppLoader",
    "default": "pgtasks.compat.celery.loaders.default:Loader",
}


def get_loader_cls(loader: Any) -> Any:
    """The loader class ``loader`` names: an alias (``"app"``, ``"default"``), a dotted path
    (``"proj.loaders:MyLoader"``) or the class itself."""
    if not isinstance(loader, str):
        return loader
    return symbol_by_name(LOADER_ALIASES.get(loader, loader))


ModuleSettings = DictAttribute
_UNREAD = object()
_CAST = re.compile(r"\((\w+)\)")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _to_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r} (true/false, yes/no, on/off, 1/0)")


# ``name=(type)value`` on a command line: the casts Celery's parser knows.
CASTS: dict[str, Callable[[str], Any]] = {
    "string": str,
    "str": str,
    "int": int,
    "float": float,
    "bool": _to_bool,
    "any": str,
    "json": json.loads,
    "tuple": json.loads,
    "list": json.loads,
    "dict": json.loads,
}


class BaseLoader:
    """The loader of an app (see the module docstring)."""

    builtin_modules: frozenset[str] = frozenset()
    configured = False
    override_backends: dict[str, str] = {}
    worker_initialized = False

    def __init__(self, app: Any, **kwargs: Any) -> None:
        self.app = app
        self.task_modules: set[str] = set()
        self._conf: Any = _UNREAD

    # -- hooks (a custom loader overrides these) -------------------------------------------
    def on_task_init(self, task_id: str, task: Any) -> None:
        """Called in the worker before each task runs."""

    def on_process_cleanup(self) -> None:
        """Called in the worker after each task ran."""

    def on_worker_init(self) -> None:
        """Called once when the worker starts, after the default modules are imported."""

    def on_worker_shutdown(self) -> None:
        """Called when the worker stops."""

    def on_worker_process_init(self) -> None:
        """Called in each child process of a prefork worker."""

    def init_worker(self) -> None:
        """Import the default modules and call :meth:`on_worker_init`, once per process."""
        if not self.worker_initialized:
            self.worker_initialized = True
            self.import_default_modules()
            self.on_worker_init()

    def shutdown_worker(self) -> None:
        self.on_worker_shutdown()

    def init_worker_process(self) -> None:
        self.on_worker_process_init()

    # -- imports -------------------------------------------------------------------------
    def now(self, utc: bool = True) -> dt.datetime:
        """The current time (aware UTC by default, else naive local time)."""
        return dt.datetime.now(dt.timezone.utc) if utc else dt.datetime.now()

    def import_module(self, module: str, package: str | None = None) -> Any:
        return importlib.import_module(module, package=package)

    def import_from_cwd(
        self, module: str, imp: Callable[..., Any] | None = None, package: str | None = None
    ) -> Any:
        return import_from_cwd(module, self.import_module if imp is None else imp, package=package)

    def import_task_module(self, module: str) -> Any:
        """Import a module of tasks; remember its name in ``task_modules``."""
        self.task_modules.add(module)
        return self.import_from_cwd(module)

    def find_module(self, module: str) -> Any:
        """The import spec of ``module``; ImportError when there is none."""
        spec = importlib.util.find_spec(module)
        if spec is None:
            raise ImportError(f"No module named {module!r}")
        return spec

    @functools.cached_property
    def default_modules(self) -> tuple[str, ...]:
        """The modules a worker imports: the loader's built-in ones, then the ``imports`` and
        ``include`` settings (read once, as Celery does)."""
        conf = self.app.conf
        return (*self.builtin_modules, *module_names(conf.imports), *module_names(conf.include))

    def import_default_modules(self) -> list[Any]:
        """Send ``import_modules`` (an exception a receiver returned is raised), finalize the
        app (its autodiscovered packages), import :attr:`default_modules`; return those."""
        for _receiver, response in signals.import_modules.send(sender=self.app):
            if isinstance(response, Exception):
                raise response
        self.app.finalize()
        return [self.import_task_module(module) for module in self.default_modules]

    def autodiscover_tasks(self, packages: Iterable[str] | None, related_name: str = "tasks") -> None:
        """Import ``<package>.<related_name>`` of each package that has one."""
        found = autodiscover_tasks(packages or (), related_name)
        self.task_modules.update(module.__name__ for module in found if module is not None)

    # -- configuration -------------------------------------------------------------------
    def config_from_object(self, obj: Any, silent: bool = False) -> bool:
        """Make ``obj`` (an object, module, mapping or import path) the loader's configuration;
        False when a path does not import and ``silent``."""
        if isinstance(obj, str):
            try:
                obj = self._smart_import(obj)
            except (ImportError, AttributeError):
                if silent:
                    return False
                raise
        self._conf = obj if isinstance(obj, Mapping) else DictAttribute(obj)
        backends = self._conf.get("override_backends")
        if backends is not None:
            self.override_backends = backends
        return True

    def _smart_import(self, path: str) -> Any:
        if ":" in path:
            return symbol_by_name(path)
        try:
            return self.import_from_cwd(path)
        except ImportError:
            return symbol_by_name(path)  # module.attribute

    def import_config_module(self, name: str) -> Any:
        """The configuration module ``name`` (``proj.celeryconfig``, not a file name)."""
        if name.endswith(".py") and _spec_or_none(name) is None:
            raise ImproperlyConfigured(
                f"{name!r} is a file name: name the configuration module as it is imported, {name[:-3]!r}"
            )
        return self.import_from_cwd(name)

    def read_configuration(self, env: str = "CELERY_CONFIG_MODULE") -> Any:
        """The settings of the module the environment variable ``env`` names, as a mapping;
        None when it is unset."""
        name = os.environ.get(env)
        if not name:
            return None
        return DictAttribute(self.import_config_module(name))

    @property
    def conf(self) -> Any:
        """The loader's configuration (:meth:`read_configuration`, read on first use)."""
        if self._conf is _UNREAD:
            self._conf = self.read_configuration()
        return self._conf

    def cmdline_config_parser(
        self,
        args: Iterable[str],
        namespace: str = "celery",
        re_type: re.Pattern[str] = _CAST,
        extra_types: Mapping[str, Callable[[str], Any]] | None = None,
        override_types: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Settings from ``name=value`` arguments: ``task_default_queue=x``; ``.name=value``
        (or ``_name``) is in ``namespace``; ``name=(int)3`` casts (``int``, ``float``,
        ``bool``, ``json``, ``list``, ...). A setting Celery knows as a boolean is one."""
        casts = {**CASTS, **(extra_types or {})}
        renamed = dict(override_types or {})
        prefix = (namespace or "").lower()
        parsed: dict[str, Any] = {}
        for arg in args:
            key, sep, value = arg.partition("=")
            if not sep:
                raise ValueError(f"{arg!r}: a setting on the command line is name=value")
            key = key.lower().replace(".", "_")
            if key.startswith("_"):
                key = f"{prefix}_{key[1:]}" if prefix else key[1:]
            cast = re_type.match(value)
            if cast:
                kind = renamed.get(cast.group(1), cast.group(1))
                if kind not in casts:
                    raise ValueError(f"{key!r}: unknown type {kind!r}; known: {', '.join(sorted(casts))}")
                parsed[key] = casts[kind](value[cast.end() :])
            elif isinstance(DEFAULTS.get(key), bool):
                try:
                    parsed[key] = _to_bool(value)
                except ValueError as exc:
                    raise ValueError(f"{key!r}: {exc}") from None
            else:
                parsed[key] = value
        return parsed


def _spec_or_none(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except ImportError:
        return None


def module_names(value: Any) -> tuple[str, ...]:
    """The modules an ``include`` or ``imports`` setting names: one name, or a list of them
    (Celery's ``maybe_list``; a name alone is not read letter by letter)."""
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def find_related_module(package: str, related_name: str) -> Any:
    """The module ``<package>.<related_name>`` (the package itself without ``related_name``);
    None when the package has no such module. A package named by a class (Django's
    ``"app.apps.Config"``) is searched one level up."""
    try:
        module = importlib.import_module(package)
        if not related_name:
            return module
    except ModuleNotFoundError:
        package = package.rpartition(".")[0]
        if not package:
            raise
    target = f"{package}.{related_name}"
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name == target:
            return None
        raise  # the module exists; something it imports does not


def autodiscover_tasks(packages: Iterable[str], related_name: str = "tasks") -> list[Any]:
    """:func:`find_related_module` of each package."""
    return [find_related_module(package, related_name) for package in packages]
