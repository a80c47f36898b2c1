"""The probe of the canvas scenarios of issue 29 (tests/compat/apps/canvas_failures.py,
canvas_graph.py): scenarios written only against Celery's API, so that the same code runs
against a `pgtasks worker` (tests/compat/test_canvas_*.py) and against the real Celery on Redis
(tests/support/celery_reference.py, tests/compat/test_celery_reference.py).

A scenario sends a workflow of :mod:`tests.compat.apps.canvas_errors_app` and returns what it
observed as plain data: task ids are replaced by the role they play (``<fail>``, ``<body>``,
...), exceptions by their type, the roles their message names and the exception types it
mentions. ``canvas_expected.EXPECTED`` holds what each must observe.

Every wait is short (``WAIT`` seconds): a scenario that does not happen fails fast. Where a
scenario checks that something happens exactly once, or not at all, it watches the ledger
for ``SETTLE`` seconds after the last line arrived (absence can only be seen over a window).

``python -m tests.compat.apps.canvas_probe [names...]`` runs scenarios (all by default) and
prints their observations as JSON: how the reference run calls them.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery.result import AsyncResult

from tests.compat.apps import canvas_errors_app as proj

WAIT = 15.0  # seconds any single wait may take (a loaded CI machine included)
SETTLE = 1.0  # seconds a count must hold to count as "exactly"
EXCEPTION_TYPES = ("ChordError", "Expected", "TaskRevokedError", "TimeoutError", "ValueError")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

SCENARIOS: dict[str, Callable[[Probe], dict[str, Any]]] = {}


def scenario(fn: Callable[[Probe], dict[str, Any]]) -> Callable[[Probe], dict[str, Any]]:
    SCENARIOS[fn.__name__] = fn
    return fn


class Probe:
    """What a scenario observes with: the ledger the tasks write, roles for task ids, and
    outcomes described as plain data."""

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        self.names: dict[str, str] = {}
        self._settled_size: int | None = None  # the ledger's size after the last SETTLE

    def token(self) -> str:
        return uuid.uuid4().hex[:12]

    def role(self, **ids: Any) -> None:
        """Name task ids (or results) by the role they play in the scenario."""
        for name, value in ids.items():
            self.names[str(getattr(value, "id", value))] = f"<{name}>"

    def named(self, value: Any) -> Any:
        """``value`` with every known task id replaced by its role (other ids by ``<id>``)."""
        if isinstance(value, str):
            known = self.names.get(value)
            if known is not None:
                return known
            return UUID.sub(lambda m: self.names.get(m.group(0), "<id>"), value)
        if isinstance(value, (list, tuple)):
            return [self.named(v) for v in value]
        if isinstance(value, dict):
            return {k: self.named(v) for k, v in value.items()}
        if isinstance(value, BaseException):
            return self.describe_error(value)
        return value

    def describe_error(self, exc: BaseException) -> str:
        """``Type naming <roles> about Types``: what an exception is and what its message names."""
        text = str(exc)
        roles = sorted({self.names.get(i, "<id>") for i in UUID.findall(text)})
        mentions = [t for t in EXCEPTION_TYPES if t in text and t != type(exc).__name__]
        described = type(exc).__name__
        if roles:
            described += " naming " + ",".join(roles)
        if mentions:
            described += " about " + ",".join(mentions)
        return described

    def outcome(self, call: Callable[[], Any]) -> Any:
        """What ``call`` (a ``get``) gives: ``{"returns": value}`` or ``{"raises": description}``."""
        try:
            value = call()
        except Exception as exc:
            return {"raises": self.describe_error(exc)}
        return {"returns": self.named(value)}

    def lines(self, kind: str, token: str) -> list[list[str]]:
        found = []
        text = self.ledger.read_text() if self.ledger.exists() else ""
        for line in text.splitlines():
            fields = line.split(" ")
            if fields[:2] == [kind, token]:
                found.append([self.named(f) for f in fields[2:]])
        return found

    def entries(self, kind: str, token: str, expected: int = 0) -> list[list[str]]:
        """The ledger's ``kind token ...`` lines (their other fields): waits up to WAIT seconds
        for ``expected`` of them; then, if any line arrived since the ledger was last watched
        for SETTLE seconds, watches it again that long, so that an extra line is seen."""
        deadline = time.monotonic() + WAIT
        while len(self.lines(kind, token)) < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        size = self.ledger.stat().st_size if self.ledger.exists() else 0
        if self._settled_size is None or size != self._settled_size:
            time.sleep(SETTLE)
            self._settled_size = self.ledger.stat().st_size if self.ledger.exists() else 0
        return sorted(self.lines(kind, token))

    def count(self, kind: str, token: str, expected: int) -> int:
        return len(self.entries(kind, token, expected))


def wait_get(result: Any, **kwargs: Any) -> Callable[[], Any]:
    return lambda: result.get(timeout=WAIT, **kwargs)


def by_id(result: Any) -> AsyncResult:
    """The result read back by its id alone (no parents known, as in another process)."""
    return AsyncResult(result.id, app=proj.app)


def chord_failure(p: Probe, res: Any, token: str) -> dict[str, Any]:
    """How a chord whose header failed looks: its result read by id, then as sent."""
    return {
        "by_id": p.outcome(wait_get(by_id(res))),
        "no_propagate": p.outcome(wait_get(res, propagate=False)),
        "as_sent": p.outcome(wait_get(res)),
        "state": by_id(res).state,
        "body_ran": p.entries("ran", token),
    }


def run(name: str, ledger: Path) -> dict[str, Any]:
    """Run one scenario; its observations."""
    from tests.compat.apps import canvas_failures, canvas_graph  # noqa: F401  (they register)

    return SCENARIOS[name](Probe(ledger))


def run_all(names: list[str], ledger: Path) -> dict[str, Any]:
    """Run scenarios one after the other; an exception is an observation too."""
    observed: dict[str, Any] = {}
    for name in names:
        try:
            observed[name] = run(name, ledger)
        except Exception as exc:  # the reference run reports it instead of stopping
            observed[name] = {"scenario raised": f"{type(exc).__name__}: {exc}"}
    return observed


def main(names: list[str]) -> None:
    from tests.compat.apps import canvas_failures, canvas_graph  # noqa: F401  (they register)

    print(json.dumps(run_all(names or list(SCENARIOS), Path(os.environ["PGTASKS_TEST_LEDGER"]))))


if __name__ == "__main__":  # the reference run
    import sys

    from tests.compat.apps import canvas_probe  # the module the scenarios register in

    canvas_probe.main(sys.argv[1:])
