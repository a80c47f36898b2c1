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
import importlib.util
import logging
import sys
import threading
import types

from pgtasks.compat import billiard
from pgtasks.compat.app import Celery
from pgtasks.compat.celery_api import uuid
from pgtasks.compat.current import current_app
from pgtasks.compat.kombu import register, registered_serializers
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
    "celery.beat": "pgtasks.compat.celery_beat",
    "celery.worker.request": "pgtasks.compat.worker_request",
    "kombu": "pgtasks.compat.kombu",
}
# Packages that only hold the modules above, built here.
PACKAGES = ("celery.app", "celery.utils", "celery.worker", "kombu.serialization")
MARK = "__pgtasks_compat__"

_lock = threading.Lock()
_real_celery_noted = False


def _package(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"pgtasks.compat: Celery's {name!r}")
    setattr(module, MARK, True)
    if name == "celery.app":
        module.Celery = Celery  # type: ignore[attr-defined]
        module.shared_task = shared_task  # type: ignore[attr-defined]
        module.app_or_default = lambda app=None: app if app is not None else current_app()  # type: ignore[attr-defined]
    elif name == "celery.utils":
        module.uuid = uuid  # type: ignore[attr-defined]
        module.gen_unique_id = uuid  # type: ignore[attr-defined]
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
        found = present or importlib.util.find_spec("celery") is not None
    except (ImportError, ValueError):
        found = present
    if found:
        log.debug("the real celery package is installed; pgtasks.compat.install() takes its place here")


def _billiard() -> dict[str, types.ModuleType]:
    """billiard's names, where the real billiard (installed with the real celery) is absent."""
    try:
        real = "billiard" in sys.modules or importlib.util.find_spec("billiard") is not None
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
        for name, module in sorted(modules.items()):
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(modules[parent], child, module)
        # "celery" last: installed() is true only once every name is in place
        for name, module in sorted(modules.items(), key=lambda item: item[0] == "celery"):
            sys.modules[name] = module


def uninstall() -> None:
    """Remove the names ``install()`` added (the next ``import celery`` finds the real one)."""
    with _lock:
        for name in [*MODULES, *PACKAGES, "billiard", "billiard.einfo", "billiard.pool"]:
            module = sys.modules.get(name)
            if module is not None and getattr(module, MARK, False):
                del sys.modules[name]
