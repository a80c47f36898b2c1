"""A Celery app shaped as the Extensions and Bootsteps guide shows one: a worker step and a
consumer step with kombu consumers of its own, for tests/compat/test_extensions_guide.py."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, bootsteps
from kombu import Consumer, Exchange, Queue, binding

app = Celery("extensions_app", broker=os.environ.get("PGTASKS_DATABASE_URL"))
media = Exchange("media", type="topic")
app.conf.task_queues = [Queue("celery"), Queue("media", bindings=[binding(media, routing_key="media.#")])]


class InfoStep(bootsteps.Step):
    """A worker step (never run by pgtasks' worker, which says so)."""


class CustomConsumerStep(bootsteps.ConsumerStep):
    """The guide's consumer step: kombu consumers of its own queue."""

    def get_consumers(self, channel: Any) -> list[Any]:
        return [Consumer(channel, queues=[Queue("custom")], callbacks=[self.handle], accept=["json"])]

    def handle(self, body: Any, message: Any) -> None:
        message.ack()


app.steps["worker"].add(InfoStep)
app.steps["consumer"].add(CustomConsumerStep)


@app.task(name="extensions_app.add")
def add(x: int, y: int) -> int:
    return x + y
