"""Celery's ``celery.app.amqp``: :class:`AMQP` (``app.amqp``) and :class:`Queues`, the queues
an app declares (``task_queues``, else ``task_default_queue``) by name, and those a worker of
the app consumes (``app.select_queues``, as ``-Q`` does). pgtasks has no exchanges or routing
keys: a queue is a name (see :mod:`pgtasks.compat.kombu.entity`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from pgtasks.compat.celery.app.routes import route
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.compat.kombu.entity import Queue

__all__ = ["AMQP", "Queues", "Router"]


def queue_names(names: str | Iterable[Any]) -> list[str]:
    """Queue names from ``'a,b'`` (as ``-Q`` takes them), names or Queue objects."""
    items = names.split(",") if isinstance(names, str) else names
    found = [str(getattr(item, "name", item)).strip() for item in items]
    return [name for name in found if name]


def declared_queues(queues: Any) -> list[Queue | str]:
    """The items of ``task_queues`` given as a list: Queue objects or queue names. Anything
    else is refused by name: a string alone would be read letter by letter, each a queue."""
    if not queues:
        return []
    if isinstance(queues, (str, bytes)) or not isinstance(queues, Iterable):
        raise ImproperlyConfigured(
            f"task_queues must be a list of Queue objects or queue names, not {queues!r}"
        )
    items = list(queues)
    for item in items:
        if not isinstance(item, (Queue, str)):
            raise ImproperlyConfigured(
                f"task_queues holds {item!r}, which is neither a Queue nor a queue name"
            )
    return items


class Queues(dict[str, Queue]):
    """Queues by name. A name not declared is created on first use (``queues['x']``, and
    ``select``) unless ``create_missing`` is false (then KeyError, as in Celery).
    ``consume_from`` is what a worker of the app consumes: every queue, or those
    :meth:`select` chose."""

    def __init__(
        self,
        queues: Iterable[Any] | Mapping[str, Any] | None = None,
        default_queue: str | None = None,
        create_missing: bool = True,
        **broker_options: Any,
    ) -> None:
        super().__init__()
        self.create_missing = create_missing
        self._consume_from: dict[str, Queue] | None = None
        if isinstance(queues, Mapping):  # Celery's old form: {name: {"exchange": ..., ...}}
            for name, options in queues.items():
                self.add_compat(name, **dict(options or {}))
        else:
            for queue in declared_queues(queues):
                self.add(queue)
        if not self and default_queue:
            self.add(default_queue)

    def __missing__(self, name: str) -> Queue:
        if not self.create_missing:
            raise KeyError(name)
        return self.add(name)

    def add(self, queue: Queue | str, **options: Any) -> Queue:
        """Declare ``queue`` (a Queue or a name, with Queue's options); return it."""
        if not isinstance(queue, Queue):
            return self.add_compat(str(queue), **options)
        self[queue.name] = queue
        return queue

    def add_compat(self, name: str, **options: Any) -> Queue:
        """Declare a queue from a name and Queue's options (exchange, routing_key, ...)."""
        queue = Queue(name, **options)
        self[name] = queue
        return queue

    def select(self, include: str | Iterable[Any] | None) -> None:
        """Consume only ``include`` (names, ``'a,b'`` or Queue objects; unknown names are
        created, unless ``create_missing`` is false); None keeps the selection as it is."""
        if include:
            self._consume_from = {name: self[name] for name in queue_names(include)}

    def deselect(self, exclude: str | Iterable[Any] | None) -> None:
        """Stop consuming ``exclude`` (from the selection, or from every queue)."""
        if exclude:
            kept = dict(self.consume_from)
            for name in queue_names(exclude):
                kept.pop(name, None)
            self._consume_from = kept

    @property
    def consume_from(self) -> dict[str, Queue]:
        """The queues a worker of the app consumes when it is given no ``-Q``."""
        return self._consume_from if self._consume_from is not None else dict(self)

    def format(self, indent: int = 0, indent_first: bool = True) -> str:
        """The consumed queues, one a line (as the banner of Celery's worker lists them)."""
        lines = [
            f".> {queue.name:<16} exchange={getattr(queue.exchange, 'name', None) or queue.name} "
            f"key={queue.routing_key}"
            for queue in sorted(self.consume_from.values(), key=lambda q: q.name)
        ]
        text = ("\n" + " " * indent).join(lines)
        return " " * indent + text if indent_first else text


QueueTable = Queues  # the class, by a name that the method AMQP.Queues does not hide


class Router:
    """``app.amqp.router``: where ``task_routes`` sends a task."""

    def __init__(self, app: Any, queues: QueueTable) -> None:
        self.app = app
        self.queues = queues

    def route(
        self,
        options: Mapping[str, Any],
        name: str,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        task_type: Any = None,
    ) -> dict[str, Any]:
        """The options a task ``name`` is sent with: its route under ``options``, ``queue``
        a Queue of :attr:`queues` (the default queue when no route names one)."""
        routed = route(
            self.app.routers,
            name,
            args or (),
            kwargs or {},
            options,
            self.app.conf.task_default_queue,
            task_type,
        )
        routed["queue"] = self.queues[routed["queue"]]
        return routed


class AMQP:
    """``app.amqp``: the app's declared queues and its router. Celery's message building and
    publishing have no counterpart: pgtasks writes tasks to the database (``send_task``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def Queues(self, queues: Any, create_missing: bool | None = None, **options: Any) -> Queues:
        """Queues from ``queues`` (the default queue when empty), missing ones created as
        ``task_create_missing_queues`` says unless ``create_missing`` is given."""
        if create_missing is None:
            create_missing = bool(self.app.conf.task_create_missing_queues)
        return Queues(queues, self.app.conf.task_default_queue, create_missing, **options)

    @functools.cached_property
    def queues(self) -> QueueTable:
        """The declared queues, read from ``task_queues`` on first use (as in Celery)."""
        return self.Queues(self.app.conf.task_queues)

    @property
    def default_queue(self) -> Queue:
        """The queue of ``task_default_queue``."""
        return self.queues[self.app.conf.task_default_queue]

    @property
    def router(self) -> Router:
        """The router of ``task_routes`` (read at each use)."""
        return Router(self.app, self.queues)
