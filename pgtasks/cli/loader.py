"""Finding the application named by ``-A``, the way Celery does."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
import types
from typing import Any

from pgtasks.app import App
from pgtasks.compat.bridge import django_support
from pgtasks.engine.errors import ConfigurationError
from pgtasks_celery_hook import CeleryFinder

# Where the names a module imports from celery live: pgtasks' Celery layer (pgtasks.compat), or
# celery itself.
CELERY_LAYER = "pgtasks.compat"


def load_app(spec: str) -> App:
    """Resolve ``-A spec`` as Celery does: ``module:attr``; ``module.attr`` (``main.celery``,
    ``config.celery_app.app``) when no module has the whole name; else the module's ``app``,
    else ``celery``, else the submodule ``module.celery`` (its ``app``, ``celery``, or the one
    App it holds under any name), else the one App instance in the module. An app behind
    ``celery.current_app`` is unwrapped. Then Django is set up (when DJANGO_SETTINGS_MODULE is
    set), as the worker does, for every command."""
    serve_celery_from_pgtasks()
    app = _find_app(spec)
    django_support.setup_django()
    return app


def serve_celery_from_pgtasks() -> None:
    """Make ``import celery`` (and kombu) in this process give pgtasks' Celery layer, also where
    the real celery is installed: the import hook goes first on ``sys.meta_path``. The layer
    itself is installed only when the app imports celery (a Celery app); a pgtasks App never
    loads it."""
    ours = [finder for finder in sys.meta_path if isinstance(finder, CeleryFinder)]
    others = [finder for finder in sys.meta_path if not isinstance(finder, CeleryFinder)]
    # the finder already registered keeps its identity: uninstall() puts that one back
    sys.meta_path[:] = [*(ours or [CeleryFinder()]), *others]


def _find_app(spec: str) -> App:
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like celery: the current folder is importable
    module_name, _, attr = spec.partition(":")
    try:
        module = _import(spec, module_name)
    except ModuleNotFoundError as exc:
        parent, _, last = module_name.rpartition(".")
        if not attr and exc.name == module_name and parent:
            # ``main.celery``: the attribute ``celery`` of module ``main``, as Celery reads it
            return _as_app(_attribute_of_module(spec, parent, last), spec)
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise ConfigurationError(
                f"-A {spec}: Unable to load celery application: no module named {exc.name!r} "
                f"(from {os.getcwd()})"
            ) from exc
        raise _failed(spec, module_name, exc) from exc
    if attr:
        found = _attr_path(module, attr)
        if found is None:
            raise ConfigurationError(f"-A {spec}: module {module_name!r} has no attribute {attr!r}")
        return _as_app(found, spec)
    found = _named_app(module)
    if found is not None:
        return found
    sub_name = f"{module_name}.celery"
    try:
        sub = _import(spec, sub_name)
    except ModuleNotFoundError as exc:
        if exc.name != sub_name:
            raise _failed(spec, sub_name, exc) from exc
        sub = None
    if sub is not None:  # ``proj/celery.py``: its app, whatever its name (Celery's find_app)
        found = _named_app(sub) or _only_app(spec, sub)
        if found is not None:
            return found
    found = _only_app(spec, module)
    if found is not None:
        return found
    if _imported_celery([module] if sub is None else [module, sub]):  # a Celery user's project
        raise ConfigurationError(
            f"-A {spec}: Unable to load celery application: module {module_name!r} defines no Celery "
            f"app (looked for 'app', 'celery', the module {sub_name!r} and any Celery instance); "
            f"name it as -A {module_name}:ATTRIBUTE"
        )
    raise ConfigurationError(f"-A {spec}: module {module_name!r} defines no pgtasks App")


def _named_app(module: types.ModuleType) -> App | None:
    """The module's ``app``, else its ``celery``, when it is an App (Celery's names)."""
    for name in ("app", "celery"):
        candidate = getattr(module, name, None)
        if isinstance(candidate, App):
            return candidate
    return None


def _only_app(spec: str, module: types.ModuleType) -> App | None:
    """The one App the module holds under any name; None when it holds none, and
    ConfigurationError when it holds several (which one is meant cannot be told)."""
    apps = list({id(v): v for v in vars(module).values() if isinstance(v, App)}.values())
    if len(apps) > 1:
        raise ConfigurationError(
            f"-A {spec}: module {module.__name__!r} has {len(apps)} Apps; name one as module:attr"
        )
    return apps[0] if apps else None


def _imported_celery(modules: list[types.ModuleType]) -> bool:
    """Whether one of ``modules`` imported celery or a name from it (``from celery import
    Celery``): pgtasks serves them from its Celery layer."""
    for module in modules:
        for value in vars(module).values():
            where = (
                value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
            )
            if isinstance(where, str) and _in_celery(where):
                return True
    return False


def _in_celery(module_name: str) -> bool:
    return module_name.split(".")[0] == "celery" or module_name.startswith(CELERY_LAYER + ".")


def _import(spec: str, module_name: str) -> types.ModuleType:
    """Import ``module_name``; a ModuleNotFoundError as it is (the caller tells whether the
    module itself is missing), any other error of the module's code as ConfigurationError."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError:
        raise
    except Exception as exc:
        raise _failed(spec, module_name, exc) from exc


def _failed(spec: str, module_name: str, exc: BaseException) -> ConfigurationError:
    """Celery's "Unable to load celery application" for an error raised while importing
    ``module_name``, on one line: the exception's type and text and where it was raised."""
    where = _raised_at(exc)
    return ConfigurationError(
        f"-A {spec}: Unable to load celery application: importing {module_name!r} raised "
        f"{type(exc).__name__}: {exc}{f' (at {where})' if where else ''}"
    )


def _raised_at(exc: BaseException) -> str:
    """``file:line`` of the code that raised ``exc`` (for a SyntaxError, of the bad line),
    leaving out the import machinery's frames."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen")]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _attr_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _attribute_of_module(spec: str, module_name: str, attr: str) -> Any:
    try:
        module = _import(spec, module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise ConfigurationError(
                f"-A {spec}: Unable to load celery application: no module named {exc.name!r} "
                f"(from {os.getcwd()})"
            ) from exc
        raise _failed(spec, module_name, exc) from exc
    found = getattr(module, attr, None)
    if found is None:
        raise ConfigurationError(
            f"-A {spec}: Unable to load celery application. Module {module_name!r} has no attribute {attr!r}"
        )
    return found


def _as_app(value: Any, spec: str) -> App:
    unwrap = getattr(value, "_get_current_object", None)  # celery.current_app and other proxies
    if callable(unwrap) and not isinstance(value, App):
        value = unwrap()
    if callable(value) and not isinstance(value, App):
        value = value()
    if not isinstance(value, App):
        raise ConfigurationError(f"-A {spec}: {type(value).__name__} is not a pgtasks App")
    return value
