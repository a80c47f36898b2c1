"""kombu's ``kombu.entity``: ``Queue`` and ``Exchange``, as applications declare
``task_queues``. pgtasks has no exchanges or routing keys: a queue is a name, and a task's
queue is the one its route names."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Exchange", "Queue", "binding"]


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


@dataclasses.dataclass(repr=False)
class binding:
    """A queue's binding to an exchange (``Queue('q', bindings=[binding(exchange, 'key')])``),
    accepted for configuration and kept in the queue's options; pgtasks routes by queue name."""

    exchange: Exchange | None = None
    routing_key: str = ""
    arguments: dict[str, Any] | None = None
    unbind_arguments: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"<binding: {getattr(self.exchange, 'name', self.exchange)}->{self.routing_key}>"
