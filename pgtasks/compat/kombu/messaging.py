"""kombu's ``kombu.messaging``: the ``Producer`` name that code wraps or names (error trackers
patch ``Producer.publish``), and ``Consumer``, which a worker bootstep of the Extensions guide
(``bootsteps.ConsumerStep.get_consumers``) builds. pgtasks has no broker to publish to or
consume from."""

from __future__ import annotations

from typing import Any

__all__ = ["Consumer", "Producer"]


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

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def release(self) -> None:
        """Nothing to release (kombu's own does nothing either); a producer from an app's
        ``producer_pool`` gives its connection back to the pool here."""

    close = release

    def publish(self, body: Any, routing_key: str | None = None, **kwargs: Any) -> None:
        raise NotImplementedError(
            "pgtasks has no message broker to publish to: send tasks with Task.apply_async() "
            "or app.send_task()"
        )


class Consumer:
    """kombu's message consumer, a name that a module defining a custom consumer step imports
    (``from kombu import Consumer``): the module loads, and the step is never run (the worker
    says so at start). Building one raises NotImplementedError: there is no broker to consume
    from."""

    def __init__(self, channel: Any = None, queues: Any = None, **kwargs: Any) -> None:
        raise NotImplementedError(
            "kombu.Consumer: pgtasks has no message broker to consume from; a task's messages are "
            "rows its worker claims: define the work as a task (@app.task) and send it to a queue"
        )
