"""The import hook: ``install()`` makes ``celery`` and the ``kombu`` names applications touch
import from pgtasks, in this process.

It puts module objects into ``sys.modules`` under Celery's names, so ``import celery``,
``from celery.schedules import crontab`` and ``from kombu import Queue`` resolve to
:mod:`pgtasks.compat`. A Celery submodule pgtasks does not provide fails to import
(``'celery' is not a package``) instead of mixing in the real Celery. If the real Celery is
installed, ``install()`` still wins for this process and says so once at debug level.
``install()`` is idempotent; ``uninstall()`` removes the names again (for tests).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import logging
import sys
import threading
import types

from pgtasks.compat import billiard, kombu_utils, utils_misc
from pgtasks.compat.app import Celery
from pgtasks.compat.current import current_app
from pgtasks.compat.kombu import register, registered_serializers
from pgtasks.compat.refused import REFUSED, refused_module
from pgtasks.compat.registration import shared_task

log = logging.getLogger("pgtasks.compat")

# Celery's module name -> the pgtasks module that provides it.
MODULES = {
    "celery": "pgtasks.compat.celery_api",
    "celery.schedules": "pgtasks.compat.schedules",
    "celery.result": "pgtasks.compat.result",
    "celery.exceptions": "pgtasks.compat.exceptions",
    "celery.signals": "pgtasks.compat.signals",
    "celery.states": "pgtasks.compat.states",
    "celery.canvas": "pgtasks.compat.canvas",
    "celery.utils.log": "pgtasks.compat.logs",
    "celery.app.task": "pgtasks.compat.task",
    "celery.app.trace": "pgtasks.compat.app_trace",
    "celery.app.base": "pgtasks.compat.app",
    "celery.app.control": "pgtasks.compat.control",
    "celery.beat": "pgtasks.compat.celery_beat",
    "celery.local": "pgtasks.compat.local",
    "celery.utils": "pgtasks.compat.utils_misc",
    "celery.utils.time": "pgtasks.compat.utils_time",
    "celery.backends.base": "pgtasks.compat.backends_base",
    "celery.contrib.abortable": "pgtasks.compat.abortable",
    "celery.contrib.testing.worker": "pgtasks.compat.testing",
    "celery.worker.request": "pgtasks.compat.worker_request",
    "kombu": "pgtasks.compat.kombu",
    "kombu.utils": "pgtasks.compat.kombu_utils",
    "kombu.entity": "pgtasks.compat.kombu",
    "kombu.messaging": "pgtasks.compat.kombu",
}
# Served on first import only (by the import hook, pgtasks_celery_hook): they import what a
# running application does not need (pytest), or are rarely imported (utils_extra).
LAZY_MODULES = {
    "celery.contrib.pytest": "pgtasks.compat.testing_pytest",
    # importing it registers the shared task celery.ping, as Celery's does
    "celery.contrib.testing.tasks": "pgtasks.compat.testing_extra",
    "celery.contrib.testing.app": "pgtasks.compat.testing_extra",
    "celery.app.log": "pgtasks.compat.utils_extra",
    "celery.app.utils": "pgtasks.compat.utils_extra",
    "celery.app.defaults": "pgtasks.compat.utils_extra",
    "celery.app.registry": "pgtasks.compat.utils_extra",
    "celery.utils.text": "pgtasks.compat.utils_extra",
    "celery.utils.saferepr": "pgtasks.compat.utils_extra",
    "celery.utils.iso8601": "pgtasks.compat.utils_extra",
    "celery.utils.collections": "pgtasks.compat.utils_extra",
    "celery.utils.graph": "pgtasks.compat.utils_extra",
    "celery.utils.dispatch": "pgtasks.compat.utils_extra",
    "celery.utils.dispatch.signal": "pgtasks.compat.utils_extra",
    "celery.contrib.django": "pgtasks.compat.django_task",
    "celery.contrib.django.task": "pgtasks.compat.django_task",
}
# Packages that only hold the modules above, built here.
PACKAGES = (
    "celery.__main__",
    "celery.app",
    "celery.backends",
    "celery.contrib",
    "celery.contrib.testing",
    "celery.worker",
    "kombu.serialization",
)
MARK = "__pgtasks_compat__"

_lock = threading.RLock()


def _really_installed(name: str) -> bool:
    """Whether the distribution's own package is on the path, asking only the path finder:
    the import hook (pgtasks_celery_hook) would answer with pgtasks' modules."""
    return importlib.machinery.PathFinder.find_spec(name) is not None


_real_celery_noted = False


def _celery_main() -> int:
    """``celery.__main__.main``: the real celery's console script run while pgtasks' names
    win (PGTASKS_CELERY=1) runs the pgtasks command line."""
    # The command is found as the installed console script (as app.start() does), so this
    # layer never imports the command line's modules.
    scripts = importlib.metadata.entry_points(group="console_scripts", name="pgtasks")
    if not scripts:
        raise RuntimeError("the celery command needs the pgtasks command: install the pgtasks package")
    return int(next(iter(scripts)).load()(sys.argv[1:]))


def _package(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"pgtasks.compat: Celery's {name!r}")
    setattr(module, MARK, True)
    if name == "celery.app":
        module.Celery = Celery  # type: ignore[attr-defined]
        module.shared_task = shared_task  # type: ignore[attr-defined]
        module.app_or_default = lambda app=None: app if app is not None else current_app()  # type: ignore[attr-defined]
    elif name == "celery.__main__":
        module.main = _celery_main  # type: ignore[attr-defined]
    elif name == "kombu.serialization":
        module.register = register  # type: ignore[attr-defined]
        module.registry = registered_serializers  # type: ignore[attr-defined]
    return module


def installed() -> bool:
    """True when ``import celery`` gives pgtasks' module in this process."""
    module = sys.modules.get("celery")
    return module is not None and getattr(module, MARK, False)


def _note_real_celery() -> None:
    global _real_celery_noted
    if _real_celery_noted:
        return
    _real_celery_noted = True
    present = "celery" in sys.modules and not installed()
    try:
        found = present or _really_installed("celery")
    except (ImportError, ValueError):
        found = present
    if found:
        log.debug("the real celery package is installed; pgtasks.compat.install() takes its place here")


def _billiard() -> dict[str, types.ModuleType]:
    """billiard's names, where the real billiard (installed with the real celery) is absent."""
    try:
        real = (
            "billiard" in sys.modules and not getattr(sys.modules["billiard"], MARK, False)
        ) or _really_installed("billiard")
    except (ImportError, ValueError):
        real = False
    if real:
        return {}
    module = importlib.import_module("pgtasks.compat.billiard")
    setattr(module, MARK, True)
    submodules = billiard.submodules()
    for sub in submodules.values():
        setattr(sub, MARK, True)
    return {"billiard": module, **submodules}


def install() -> None:
    """Make Celery's and kombu's names import from pgtasks in this process (idempotent)."""
    with _lock:
        if installed():
            return
        _note_real_celery()
        for name in [
            n for n in sys.modules if n in ("celery", "kombu") or n.startswith(("celery.", "kombu."))
        ]:
            del sys.modules[name]  # a real celery imported earlier no longer answers
        modules: dict[str, types.ModuleType] = {}
        for name, target in MODULES.items():
            module = importlib.import_module(target)
            setattr(module, MARK, True)
            modules[name] = module
        for name in PACKAGES:
            modules[name] = _package(name)
        modules["kombu"].serialization = modules["kombu.serialization"]  # type: ignore[attr-defined]
        modules.update(_billiard())
        for generated in (utils_misc.submodules(), kombu_utils.submodules()):
            for name, module in generated.items():
                setattr(module, MARK, True)
                modules[name] = module
        for name, module in modules.items():
            # A parent of other names is a package: importing a name below it that pgtasks
            # does not serve then reaches the import hook, which says so clearly.
            if any(other.startswith(name + ".") for other in modules) and not hasattr(module, "__path__"):
                module.__path__ = []
        for name, module in sorted(modules.items()):
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(modules[parent], child, module)
        # "celery" last: installed() is true only once every name is in place
        for name, module in sorted(modules.items(), key=lambda item: item[0] == "celery"):
            sys.modules[name] = module


def load_lazy(name: str) -> types.ModuleType | None:
    """Import the pgtasks module serving ``name`` of :data:`LAZY_MODULES` into ``sys.modules``
    under that name; None when ``name`` is not one of them."""
    target = LAZY_MODULES.get(name)
    if target is None:
        if name not in REFUSED:
            return None
        module = refused_module(name)  # importable; using a name raises NotImplementedError
    else:
        module = importlib.import_module(target)
        setattr(module, MARK, True)
        if any(other.startswith(name + ".") for other in LAZY_MODULES) and not hasattr(module, "__path__"):
            module.__path__ = []  # its children are served too (celery.utils.dispatch.signal)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        # On the parent as registered and on the module object serving it (the one ``import
        # celery`` may have bound): ``from celery import bootsteps`` reads the attribute.
        holder = sys.modules[parent]
        for each in (holder, sys.modules.get(holder.__name__)):
            if each is not None:
                setattr(each, child, module)
    return module


def uninstall() -> None:
    """Remove the names ``install()`` added (the next ``import celery`` finds the real one)."""
    with _lock:
        generated = [*utils_misc.submodules(), *kombu_utils.submodules()]
        for name in [
            *MODULES,
            *LAZY_MODULES,
            *REFUSED,
            *PACKAGES,
            *generated,
            "billiard",
            "billiard.einfo",
            "billiard.pool",
        ]:
            module = sys.modules.get(name)
            if module is not None and getattr(module, MARK, False):
                del sys.modules[name]
