"""The canvas scenarios of issue 29 run against the real Celery 5 on Redis (the separate venv,
``make celery-env``, and Debian's redis-server): what canvas_expected.py pins as Celery's
behaviour is what Celery does, and where it records that Celery on Redis does otherwise
(``CELERY_ON_REDIS``), Celery still does that. pgtasks' side of the same scenarios is in
test_canvas_failures.py and test_canvas_graph.py."""

from __future__ import annotations

from typing import Any

from tests.compat.apps.canvas_expected import CELERY_ON_REDIS, EXPECTED
from tests.support.celery_reference import celery_reference


def test_the_pinned_behaviour_is_celerys() -> None:
    with celery_reference("tests.compat.apps.canvas_errors_app") as reference:
        observed: dict[str, Any] = reference.run("tests.compat.apps.canvas_probe", *EXPECTED)
    pinned = {name: {**expected, **CELERY_ON_REDIS.get(name, {})} for name, expected in EXPECTED.items()}
    differing = {name: observed.get(name) for name in pinned if observed.get(name) != pinned[name]}
    assert differing == {}, f"Celery on Redis now does otherwise: {differing}"
