"""Tasks declared with ``pydantic=True`` (Celery 5.5+): written only against Celery's API."""

from __future__ import annotations

import os

from celery import Celery, shared_task
from pydantic import BaseModel, ValidationInfo, field_validator

from tests.compat.apps.ledger import note

app = Celery("typed", broker=os.environ.get("PGTASKS_DATABASE_URL"))


class Order(BaseModel):
    sku: str
    quantity: int


class Receipt(BaseModel):
    sku: str
    total: float
    note: str | None = None


class Scaled(BaseModel):
    value: int

    @field_validator("value")
    @classmethod
    def scale(cls, value: int, info: ValidationInfo) -> int:
        """Uses the validation context: ``factor`` from pydantic_context, and the task name."""
        context = info.context or {}
        note("context", context.get("celery_task_name"), type(context.get("celery_app")).__name__)
        return value * context.get("factor", 1)


@app.task(pydantic=True)
def price(order: Order, unit: float) -> Receipt:
    """The order arrives as a dict and is an Order here; the Receipt leaves as a dict."""
    note("price", type(order).__name__, order.quantity)
    return Receipt(sku=order.sku, total=order.quantity * unit)


@app.task(pydantic=True)
def maybe_price(order: Order | None = None) -> Receipt | None:
    if order is None:
        return None
    return Receipt(sku=order.sku, total=float(order.quantity))


@app.task(pydantic=True)
def other_model(order: Order) -> Receipt:
    """Returns a model that is not the annotated one: not dumped (as Celery), so not storable."""
    return order  # type: ignore[return-value]


@app.task(pydantic=True, pydantic_strict=True)
def strict_price(order: Order) -> int:
    return order.quantity


@app.task(pydantic=True, pydantic_context={"factor": 10})
def scaled(item: Scaled) -> int:
    return item.value


@app.task(pydantic=True, pydantic_dump_kwargs={"exclude_none": True})
def without_none(order: Order) -> Receipt:
    return Receipt(sku=order.sku, total=1.5)


@app.task(bind=True, pydantic=True)
def bound(self, order: Order) -> Receipt:
    return Receipt(sku=f"{order.sku}@{self.request.id is not None}", total=0)


@shared_task(pydantic=True)
def shared_price(order: Order) -> Receipt:
    return Receipt(sku=order.sku, total=order.quantity * 2.0)
