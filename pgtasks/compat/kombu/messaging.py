"""kombu's ``kombu.messaging``: the ``Producer`` name that code wraps or names (error trackers
patch ``Producer.publish``). pgtasks has no broker to publish to."""

from __future__ import annotations

from typing import Any

__all__ = ["Producer"]


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
