"""The canvas scenarios of issue 29 run against the real Celery 5 on Redis (the separate venv,
``make celery-env``, and Debian's redis-server): what canvas_expected.py pins as Celery's
behaviour is what Celery does, and where it records that Celery on Redis does otherwise
(``CELERY_ON_REDIS``), Celery still does that. pgtasks' side of the same scenarios is in
test_canvas_failures.py and test_canvas_graph.py.

Only the essential pins run here (every scenario costs the real worker seconds, and those
where Celery never ends cost their whole wait): a chord's error and its errbacks, errbacks by
calling style, per group member and in a chain, the ids of a chain, and one deviation from
the documentation (a header chain's error names its last task).
``python -m tests.compat.apps.canvas_probe`` with the reference venv runs all of them."""

from __future__ import annotations

from typing import Any

from tests.compat.apps.canvas_expected import CELERY_ON_REDIS, EXPECTED
from tests.compat.apps.edges_probe import EXPECTED as EDGES
from tests.support.celery_reference import celery_reference

ESSENTIAL = (
    "header_chain_fails_in_the_middle",
    "chord_errbacks_when_the_header_fails",
    "task_errbacks_of_every_style",
    "group_errback_per_failed_member",
    "chain_errbacks",
    "chain_ids",
)


def test_the_pinned_behaviour_is_celerys() -> None:
    with celery_reference("tests.compat.apps.canvas_errors_app") as reference:
        observed: dict[str, Any] = reference.run("tests.compat.apps.canvas_probe", *ESSENTIAL)
    pinned = {name: {**EXPECTED[name], **CELERY_ON_REDIS.get(name, {})} for name in ESSENTIAL}
    differing = {name: observed.get(name) for name in pinned if observed.get(name) != pinned[name]}
    assert differing == {}, f"Celery on Redis now does otherwise: {differing}"


def test_the_pinned_edges_are_celerys() -> None:
    """tests/compat/apps/edges_probe.py's EXPECTED (an expired task's ``task_revoked``,
    ``retry(throw=False)``, a retried task's errback, a chord body's request) is what Celery
    on Redis does; test_edges.py runs the same scenarios on pgtasks."""
    with celery_reference("tests.compat.apps.edges_app") as reference:
        observed: dict[str, Any] = reference.run("tests.compat.apps.edges_probe", *EDGES)
    differing = {name: observed.get(name) for name in EDGES if observed.get(name) != EDGES[name]}
    assert differing == {}, f"Celery on Redis now does otherwise: {differing}"
