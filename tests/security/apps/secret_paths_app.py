"""Tasks that put their ``secret_args`` values on every path a worker might log: exception
messages and reprs, chained exceptions, tracebacks, retries, outcomes that cannot be encoded.
The same tasks are registered in ``logged`` (``log_task_args=True``) and ``quiet`` (the default)
for ``tests/security/test_secret_paths.py``."""

from __future__ import annotations

from typing import Any

from pgtasks import App, RetryRequested, current_task


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


class CardError(Exception):
    """Its text shows the card; its arguments are too deep for JSON (the old internal-error path)."""

    def __init__(self, card: str) -> None:
        super().__init__(card, nested(5000, card))
        self.card = card

    def __str__(self) -> str:
        return f"card {self.card} declined"


class LoudError(Exception):
    """``__str__`` raises an error that quotes the secret."""

    def __init__(self, card: str) -> None:
        super().__init__()
        self.card = card

    def __str__(self) -> str:
        raise ValueError(f"cannot show {self.card}")

    def __repr__(self) -> str:
        raise ValueError(f"cannot repr {self.card}")


def register(app: App) -> None:
    @app.task(name="paths.internal", secret_args=("card",))
    def internal(card: str) -> None:
        raise CardError(card)

    @app.task(name="paths.loud", secret_args=("card",))
    def loud(card: str) -> None:
        raise LoudError(card)

    @app.task(name="paths.chained", secret_args=("card",))
    def chained(card: str) -> None:
        try:
            raise KeyError(card)
        except KeyError as exc:
            raise RuntimeError(f"lookup of {card!r} failed") from exc

    @app.task(name="paths.retry", secret_args=("card",))
    def retry(card: str) -> str:
        ctx = current_task()
        if ctx is not None and ctx.retries == 0:
            raise RetryRequested(countdown=0, reason=ValueError(f"try {card} again"))
        return "ok"

    @app.task(name="paths.deep_result", secret_args=("card",))
    def deep_result(card: str) -> Any:
        return nested(5000, card)

    @app.task(name="paths.repr_result", secret_args=("card",))
    def repr_result(card: str) -> Any:
        return {"card": card, "object": object()}


logged = App("pathslogged", log_task_args=True, poll_interval=0.05)
quiet = App("pathsquiet", poll_interval=0.05)
register(logged)
register(quiet)
