"""An application whose worker exports OpenTelemetry spans to a file (PGTASKS_TEST_SPANS)."""

from __future__ import annotations

from pgtasks import App
from tests.support.tracing import export_to_file_from_env

export_to_file_from_env()

app = App("traced", poll_interval=0.05)


@app.step(name="reserve")
def reserve(order: int) -> int:
    return order * 10


@app.step(name="charge")
def charge(amount: int) -> str:
    return f"charged {amount}"


@app.task(name="traced.checkout")
def checkout(order: int) -> str:
    return charge(reserve(order))


@app.task(name="traced.explode")
def explode() -> None:
    raise ValueError("the card was declined")


@app.task(name="traced.fan_out")
def fan_out(n: int) -> list[str]:
    return [checkout.delay(i).id for i in range(n)]
