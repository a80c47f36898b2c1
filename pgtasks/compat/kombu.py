"""The ``kombu`` names Celery applications touch: ``Queue`` and ``Exchange`` (to declare
``task_queues``), and ``kombu.serialization.register``. pgtasks has no exchanges or routing
keys: a queue is a name, and a task's queue is the one its route names."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("pgtasks.compat")

__all__ = ["Exchange", "Producer", "Queue", "register"]


class Exchange:
    """Accepted for configuration; pgtasks routes by queue name only."""

    def __init__(self, name: str = "", type: str = "direct", durable: bool = True, **kwargs: Any) -> None:
        self.name = name
        self.type = type
        self.durable = durable
        self.options = kwargs

    def __repr__(self) -> str:
        return f"<Exchange {self.name}({self.type})>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Exchange) and (self.name, self.type) == (other.name, other.type)

    def __hash__(self) -> int:
        return hash((self.name, self.type))


class Queue:
    """A queue by name (``Queue('videos', Exchange('media'), routing_key='media.video')``);
    ``queue_arguments={'x-max-priority': 10}`` and the other broker options are ignored."""

    def __init__(
        self, name: str = "", exchange: Exchange | str | None = None, routing_key: str = "", **kwargs: Any
    ) -> None:
        self.name = name
        self.exchange = exchange if isinstance(exchange, Exchange) or exchange is None else Exchange(exchange)
        self.routing_key = routing_key or name
        self.options = kwargs

    def __repr__(self) -> str:
        return f"<unbound Queue {self.name} -> {self.exchange!r} -> {self.routing_key}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Queue) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)


class Producer:
    """kombu's message producer, for code that names or wraps it (error trackers patch
    ``Producer.publish``). pgtasks has no broker to publish to: tasks are sent with
    ``Task.apply_async`` or ``app.send_task``."""

    def __init__(
        self, channel: Any = None, exchange: Any = None, routing_key: str = "", **kwargs: Any
    ) -> None:
        self.channel = channel
        self.exchange = exchange
        self.routing_key = routing_key
        self.options = kwargs

    def publish(self, body: Any, routing_key: str | None = None, **kwargs: Any) -> None:
        raise NotImplementedError(
            "pgtasks has no message broker to publish to: send tasks with Task.apply_async() "
            "or app.send_task()"
        )


_serializers: dict[str, tuple[Any, Any, str, str]] = {}


def register(
    name: str, encoder: Any, decoder: Any, content_type: str, content_encoding: str = "utf-8"
) -> None:
    """kombu's ``serialization.register``: remembered, but pgtasks stores values as JSON (or
    pickle when the application opts in); other serializers are not used."""
    _serializers[name] = (encoder, decoder, content_type, content_encoding)
    log.debug("kombu.serialization.register(%r): accepted; pgtasks serializes with json", name)


def registered_serializers() -> list[str]:
    return sorted(_serializers)
