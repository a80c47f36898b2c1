"""The Celery app's smaller public attributes: where extensions register themselves
(``steps``, ``user_options``, ``on_init``), what the app was built with (``fixups``, the
``*_cls`` names, ``set_as_current``), identities and clocks (``oid``, ``thread_oid``,
``clock``), and helpers Celery documents on the app (``either``, ``prepare_config``,
``config_from_cmdline``, ``subclass_with_self``, ``create_task_cls``, ``type_checker``,
``current_worker_task``, ``uses_utc_timezone``, ``bugreport``)."""

from __future__ import annotations

import inspect
import os
import platform
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from pgtasks.compat.celery import _state
from pgtasks.compat.celery.app.annotations import prepare
from pgtasks.compat.celery.app.utils import bugreport
from pgtasks.compat.kombu.clocks import LamportClock
from pgtasks.compat.kombu.utils.imports import symbol_by_name

__all__ = ["AppAttributesMixin"]

BUILTIN_FIXUPS = frozenset({"celery.fixups.django:fixup"})


class AppAttributesMixin:
    """What the Celery app adds beside tasks, sending and configuration."""

    conf: Any
    loader: Any
    task_cls: type[Any]
    _finalized: bool

    SYSTEM = platform.system()
    IS_macOS = SYSTEM == "Darwin"
    IS_WINDOWS = SYSTEM == "Windows"

    # What the app builds its parts from: `log` and `amqp` from these (Celery's own paths stand
    # for pgtasks' classes); the others are what Celery's paths say, pgtasks' parts are its own.
    loader_cls: Any = "celery.loaders.app:AppLoader"
    log_cls: Any = "celery.app.log:Logging"
    control_cls: Any = "celery.app.control:Control"
    events_cls: Any = "celery.app.events:Events"
    amqp_cls: Any = "celery.app.amqp:AMQP"
    backend_cls: Any = None
    registry_cls: Any = "celery.app.registry:TaskRegistry"
    builtin_fixups = BUILTIN_FIXUPS
    use_fast_trace_task = False  # Celery's worker optimisation; pgtasks' worker has its own path

    def _init_attributes(self, set_as_current: bool, fixups: Any, parts: dict[str, Any]) -> None:
        self.set_as_current = set_as_current
        self.fixups = set(BUILTIN_FIXUPS if fixups is None else fixups)
        for name, given in parts.items():
            if given is not None:
                setattr(self, f"{name}_cls", given)

    def on_init(self) -> None:
        """Called at the end of ``__init__``: override it in a subclass."""

    # -- where extensions register ---------------------------------------------------------
    @cached_property
    def steps(self) -> defaultdict[str, set[Any]]:
        """Bootsteps by blueprint (``app.steps['worker'].add(MyStep)``). pgtasks' worker has no
        bootsteps: it names the ones added here in a warning at start and does not run them."""
        return defaultdict(set)

    @cached_property
    def user_options(self) -> defaultdict[str, set[Any]]:
        """Command-line options added by the app (``app.user_options['preload'].add(option)``),
        by command (``worker``, ``beat``, ``preload``)."""
        return defaultdict(set)

    # -- state --------------------------------------------------------------------------------
    @property
    def configured(self) -> bool:
        """True: pgtasks' ``conf`` reads its sources at each lookup and is never pending."""
        return True

    @property
    def finalized(self) -> bool:
        """Whether :meth:`finalize` ran (the ``include``/autodiscovered modules imported)."""
        return self._finalized

    @property
    def current_worker_task(self) -> Any:
        """The innermost task a worker runs on this thread (a task called directly inside it
        is not one), or None."""
        return _state.get_current_worker_task()

    @cached_property
    def oid(self) -> str:
        """An id for this app in this process (Celery's object id)."""
        return str(uuid.uuid3(uuid.NAMESPACE_OID, f"{uuid.getnode()}-{os.getpid()}-{id(self)}"))

    @property
    def thread_oid(self) -> str:
        """An id for this app in this thread."""
        ids = self.__dict__.setdefault("_thread_oids", threading.local())
        if not hasattr(ids, "oid"):
            ids.oid = str(uuid.uuid3(uuid.NAMESPACE_OID, f"{self.oid}-{threading.get_ident()}"))
        return str(ids.oid)

    @cached_property
    def clock(self) -> LamportClock:
        """The app's Lamport clock (``app.clock.forward()``)."""
        return LamportClock()

    def uses_utc_timezone(self) -> bool:
        """Whether the app's time zone is UTC (no ``timezone`` setting, or UTC)."""
        zone = self.conf.get("timezone")
        return not zone or str(zone).upper() in ("UTC", "ETC/UTC")

    # -- helpers ------------------------------------------------------------------------------
    def either(self, default_key: str, *defaults: Any) -> Any:
        """The first of ``defaults`` that is not None, else the setting ``default_key``."""
        for value in defaults:
            if value is not None:
                return value
        return self.conf.get(default_key)

    def prepare_config(self, c: Any) -> Any:
        """The configuration before it is merged with the defaults (returned as it is)."""
        return c

    def config_from_cmdline(self, argv: Sequence[str], namespace: str = "celery") -> None:
        """Settings from ``name=value`` arguments (see the loader's ``cmdline_config_parser``)."""
        self.conf.update(self.loader.cmdline_config_parser(argv, namespace))

    def subclass_with_self(
        self,
        Class: type[Any],
        name: str | None = None,
        attribute: str = "app",
        reverse: str | None = None,
        keep_reduce: bool = False,
        **kw: Any,
    ) -> type[Any]:
        """A subclass of ``Class`` (a class, or its ``"module:name"`` path) whose
        ``attribute`` is this app."""
        if isinstance(Class, str):
            Class = symbol_by_name(Class)
        attrs = {"__module__": Class.__module__, "__doc__": Class.__doc__, attribute: self, **kw}
        return type(name or Class.__name__, (Class,), attrs)

    def create_task_cls(self) -> type[Any]:
        """A base task class bound to this app (what ``app.Task`` is made from in Celery)."""
        return self.subclass_with_self(
            self.task_cls, name="Task", attribute="_app", keep_reduce=True, abstract=True
        )

    def type_checker(self, fun: Callable[..., Any], bound: bool = False) -> Callable[..., None]:
        """A function that raises TypeError when called with arguments ``fun`` does not take
        (``bound``: its first parameter, the task, is left out)."""
        signature = inspect.signature(fun)
        if bound:
            parameters = list(signature.parameters.values())[1:]
            signature = signature.replace(parameters=parameters)

        def check(*args: Any, **kwargs: Any) -> None:
            signature.bind(*args, **kwargs)

        check.__name__ = getattr(fun, "__name__", "check")
        return check

    @cached_property
    def annotations(self) -> list[Any]:
        """``task_annotations`` as annotation objects (see ``celery.app.annotations``), read
        once, as Celery's: when the app is finalized, or first asked."""
        return prepare(self.conf.task_annotations)

    def bugreport(self) -> str:
        """The versions and settings to paste into a bug report."""
        return bugreport(self)
