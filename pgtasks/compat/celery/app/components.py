"""The parts of Celery's app object built on demand: ``app.log``, ``app.amqp``, ``app.events``,
``app.Worker``/``app.WorkController``/``app.Beat``, ``select_queues`` and ``setup_security``;
mixed into :class:`pgtasks.compat.celery.app.base.Celery`."""

from __future__ import annotations

import functools
import types
from typing import Any, NoReturn

from pgtasks.compat.bridge.refused import REFUSED, refused_module
from pgtasks.compat.celery.app.amqp import AMQP
from pgtasks.compat.celery.app.log import Logging
from pgtasks.compat.celery.app.programs import Beat as BeatProgram
from pgtasks.compat.celery.app.programs import WorkController as WorkControllerProgram
from pgtasks.compat.celery.app.programs import Worker as WorkerProgram
from pgtasks.compat.kombu.utils.imports import symbol_by_name

__all__ = ["AppComponents"]


class AppComponents:
    """``log`` and ``amqp`` are built once, from ``log_cls``/``amqp_cls`` (the class, or its
    ``'module:Class'`` path, given to ``Celery(log=..., amqp=...)``); Celery's own classes'
    paths (the defaults) are pgtasks' classes of the same names."""

    log_cls: Any
    amqp_cls: Any

    @functools.cached_property
    def log(self) -> Logging:
        """Celery's logging set-up (:class:`pgtasks.compat.celery.app.log.Logging`)."""
        made: Logging = _component_class(self.log_cls, Logging)(app=self)
        return made

    @functools.cached_property
    def amqp(self) -> AMQP:
        """The declared queues and the router (:class:`pgtasks.compat.celery.app.amqp.AMQP`)."""
        made: AMQP = _component_class(self.amqp_cls, AMQP)(app=self)
        return made

    @functools.cached_property
    def events(self) -> types.ModuleType:
        """Celery events are refused: ``app.events.State()``, ``.Receiver(...)``,
        ``.Dispatcher(...)`` raise NotImplementedError saying why."""
        return refused_module("celery.app.events")

    def select_queues(self, queues: Any = None) -> None:
        """Make a worker started from this app consume only ``queues`` (as ``-Q`` does;
        an explicit ``-Q`` still wins)."""
        self.amqp.queues.select(queues)

    def setup_security(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: NotImplementedError saying why (Celery's message signing)."""
        raise NotImplementedError(f"app.setup_security: {REFUSED['celery.security']}")

    def WorkController(self, **options: Any) -> WorkControllerProgram:
        """A worker of this app to run in this process (see :mod:`pgtasks.compat.celery.app.programs`)."""
        return WorkControllerProgram(app=self, **options)

    def Worker(self, **options: Any) -> WorkerProgram:
        """Celery's ``app.Worker(**options).start()`` (see :mod:`pgtasks.compat.celery.app.programs`)."""
        return WorkerProgram(app=self, **options)

    def Beat(self, **options: Any) -> BeatProgram:
        """Celery's ``app.Beat(**options).run()`` (see :mod:`pgtasks.compat.celery.app.programs`)."""
        return BeatProgram(app=self, **options)


def _component_class(given: Any, own: type) -> Any:
    """``given`` (a class or its path), or ``own`` when it is None or names Celery's class
    of the same module and name (``celery.app.log:Logging``)."""
    celery_path = own.__module__.removeprefix("pgtasks.compat.") + ":" + own.__name__
    if given is None or given == celery_path:
        return own
    return symbol_by_name(given) if isinstance(given, str) else given
