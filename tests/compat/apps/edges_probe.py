"""Edge scenarios written only against Celery's API, run against a `pgtasks worker`
(tests/compat/test_edges.py) and against the real Celery on Redis (the reference run,
tests/compat/test_celery_reference.py): each returns what it observed as plain data, task ids
replaced by the role they play. ``EXPECTED`` holds what each must observe: what Celery 5.7 on
Redis was seen doing.

``python -m tests.compat.apps.edges_probe [names...]`` runs scenarios (all by default) and
prints their observations as JSON: how the reference run calls them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery import chain, chord, group
from celery.result import AsyncResult

from tests.compat.apps import edges_app as proj
from tests.compat.apps.canvas_probe import WAIT, Probe

SCENARIOS: dict[str, Callable[[Probe], dict[str, Any]]] = {}


def scenario(fn: Callable[[Probe], dict[str, Any]]) -> Callable[[Probe], dict[str, Any]]:
    SCENARIOS[fn.__name__] = fn
    return fn


def noted(p: Probe, kind: str, token: str, expected: int) -> list[Any]:
    """The ledger's JSON notes of ``kind`` for ``token`` (waits for ``expected``), roles named."""
    return [p.named(json.loads(" ".join(fields))) for fields in p.entries(kind, token, expected)]


def raw_notes(p: Probe, kind: str, token: str) -> list[dict[str, Any]]:
    """The ledger's JSON notes of ``kind`` for ``token`` as written (ids not named)."""
    found = []
    for line in p.ledger.read_text().splitlines():
        fields = line.split(" ", 2)
        if fields[:2] == [kind, token]:
            found.append(json.loads(fields[2]))
    return found


def settled_state(result: AsyncResult, states: tuple[str, ...]) -> str:
    deadline = time.monotonic() + WAIT
    while result.state not in states and time.monotonic() < deadline:
        time.sleep(0.02)
    return result.state


@scenario
def expired_task_revoked(p: Probe) -> dict[str, Any]:
    """A task sent with ``expires`` already past: the worker's ``task_revoked`` and its state."""
    token = p.token()
    past = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    res = proj.add.apply_async((1, 2), {"token": token}, expires=past)
    p.role(task=res)
    return {
        "state": settled_state(AsyncResult(res.id, app=proj.app), ("REVOKED", "SUCCESS", "FAILURE")),
        "get": p.outcome(lambda: res.get(timeout=WAIT)),
        "result": repr(AsyncResult(res.id, app=proj.app).result),
        "signals": noted(p, "revoked", token, 1),
        "ran": p.entries("ran", token),
    }


@scenario
def retry_without_throw(p: Probe) -> dict[str, Any]:
    """``self.retry(countdown=3, throw=False)`` on the first run, which then returns a value."""
    token = p.token()
    res = proj.retry_without_throw.delay(token)
    p.role(task=res)
    first = noted(p, "postrun", token, 1)[:1]
    by_id = AsyncResult(res.id, app=proj.app)
    between = {"state": by_id.state, "result": p.named(by_id.result)}
    runs = noted(p, "postrun", token, 2)
    return {
        "first_postrun": first,
        "between": between,
        "retry_returned": noted(p, "retry_returned", token, 1),
        "runs": noted(p, "run", token, 2),
        "task_retry": noted(p, "task_retry", token, 0),
        "postruns": runs,
        "get": p.outcome(lambda: AsyncResult(res.id, app=proj.app).get(timeout=WAIT)),
        "state": AsyncResult(res.id, app=proj.app).state,
    }


@scenario
def retried_task_errback(p: Probe) -> dict[str, Any]:
    """A task with a new-style errback (request, exc, traceback) retries once, then fails."""
    token = p.token()
    res = proj.retry_then_fail.apply_async((token,), link_error=proj.errback.s(token=token))
    p.role(task=res)
    return {
        "runs": noted(p, "run", token, 2),
        "task_retry": noted(p, "task_retry", token, 1),
        "errbacks": noted(p, "errback", token, 1),
        "get": p.outcome(lambda: res.get(timeout=WAIT)),
    }


@scenario
def requeued_task_request(p: Probe) -> dict[str, Any]:
    """A task rejected with ``requeue=True`` once: its second delivery's request."""
    token = p.token()
    res = proj.rejected_once.delay(token)
    p.role(task=res)
    return {"get": p.outcome(lambda: res.get(timeout=WAIT)), "runs": noted(p, "run", token, 2)}


@scenario
def chord_body_request(p: Probe) -> dict[str, Any]:
    """A chord's body sees its request: ``group``, ``group_index``, ``chord``, parent and root."""
    token = p.token()
    header = [proj.add.s(1, 1, token=token), proj.add.s(2, 2, token=token)]
    res = chord(header, proj.body.s(token))()
    p.role(body=res, header_group=res.parent)
    for member in res.parent.results:  # one role: the body's parent is the last to end
        p.role(header=member)
    return {
        "get": p.outcome(lambda: res.get(timeout=WAIT)),
        "header": noted(p, "ran", token, 2),
        "body": noted(p, "body", token, 1),
    }


REVOKED_EXPIRED = {"expired": True, "signum": None, "terminated": False}
TASK = "tests.compat.apps.edges_app"
REQUEST = {"chord": None, "group": None, "group_index": None}
HEADER = {"chord": "<set>", "group": "<header_group>", "parent_id": None, "retries": 0}


# What Celery 5.7 on Redis was seen doing (test_celery_reference.py checks it still does).
@scenario
def chord_body_request_in_a_chain_or_group(p: Probe) -> dict[str, Any]:
    """A chord whose body is a chain, and a chord in a group: their bodies' requests."""
    chained, grouped = p.token(), p.token()
    ids = {name: str(uuid.uuid4()) for name in ("first", "last", "grouped_body")}
    p.role(**ids)
    header = [proj.add.s(1, 1, token=chained), proj.add.s(2, 2)]
    first, last = (
        proj.body.s(chained).set(task_id=ids["first"]),
        proj.body.s(chained).set(task_id=ids["last"]),
    )
    res = chord(header, chain(first, last))()
    grouped_body = proj.body.s(grouped).set(task_id=ids["grouped_body"])
    in_group = group(chord([proj.add.s(1, 1), proj.add.s(2, 2)], grouped_body), proj.add.s(5, 5))()
    p.role(outer_group=in_group)
    noted(p, "ran", chained, 1)
    p.role(header_group=raw_notes(p, "ran", chained)[0]["group"])
    return {
        "get": p.outcome(lambda: [res.get(timeout=WAIT), in_group.get(timeout=WAIT)]),
        "chain_body": [
            {k: v for k, v in seen.items() if k in ("id", "group", "group_index", "chord")}
            for seen in noted(p, "body", chained, 2)
        ],
        "header": [
            {k: v for k, v in seen.items() if k in ("group", "group_index")}
            for seen in noted(p, "ran", chained, 1)
        ],
        "grouped_body": [
            {k: v for k, v in seen.items() if k in ("id", "group", "group_index", "chord")}
            for seen in noted(p, "body", grouped, 1)
        ],
    }


EXPECTED: dict[str, dict[str, Any]] = {
    # the worker that finds the task past its expiry sends task_revoked (expired=True) with
    # the task as sender and the request; the task never runs and reads REVOKED
    "expired_task_revoked": {
        "state": "REVOKED",
        "get": {"raises": "TaskRevokedError"},
        "result": "TaskRevokedError('expired')",
        "signals": [
            {
                "request_id": "<task>",
                "request_task": f"{TASK}.add",
                "sender": f"{TASK}.add",
                **REVOKED_EXPIRED,
            }
        ],
        "ran": [],
    },
    # the first run's return value is the result (SUCCESS at once); the retry still runs, and
    # what it returns is not stored over it
    "retry_without_throw": {
        "first_postrun": [{"id": "<task>", "retval": "'returned at retries=0'", "state": "SUCCESS"}],
        "between": {"state": "SUCCESS", "result": "returned at retries=0"},
        "retry_returned": [{"type": "Retry"}],
        "runs": [
            {**REQUEST, "id": "<task>", "parent_id": "<task>", "retries": 1, "root_id": "<task>"},
            {**REQUEST, "id": "<task>", "parent_id": None, "retries": 0, "root_id": "<task>"},
        ],
        "task_retry": [],  # no on_retry, no task_retry: the run did not raise the Retry
        "postruns": [
            {"id": "<task>", "retval": "'returned at retries=0'", "state": "SUCCESS"},
            {"id": "<task>", "retval": "'returned at retries=1'", "state": "SUCCESS"},
        ],
        "get": {"returns": "returned at retries=0"},
        "state": "SUCCESS",
    },
    # a retry is sent by the task itself: the retried run's parent is the task's own id
    "retried_task_errback": {
        "runs": [
            {**REQUEST, "id": "<task>", "parent_id": "<task>", "retries": 1, "root_id": "<task>"},
            {**REQUEST, "id": "<task>", "parent_id": None, "retries": 0, "root_id": "<task>"},
        ],
        "task_retry": [{"id": "<task>"}],
        "errbacks": [
            {
                **REQUEST,
                "exc": "ValueError",
                "id": "<task>",
                "parent_id": "<task>",
                "retries": 1,
                "root_id": "<task>",
            }
        ],
        "get": {"raises": "ValueError"},
    },
    # a message requeued by Reject(requeue=True) is delivered again as it was: its parent kept
    "requeued_task_request": {
        "get": {"returns": "second-pass"},
        "runs": [{**REQUEST, "id": "<task>", "parent_id": None, "retries": 0, "root_id": "<task>"}] * 2,
    },
    # the body's group is the header's group (no index, no chord); its parent is the header
    # task that ended last, its root that task's root
    "chord_body_request": {
        "get": {"returns": 6},
        "header": [
            {**HEADER, "group_index": 0, "id": "<header>", "root_id": "<header>"},
            {**HEADER, "group_index": 1, "id": "<header>", "root_id": "<header>"},
        ],
        "body": [
            {
                **REQUEST,
                "group": "<header_group>",
                "id": "<body>",
                "parent_id": "<header>",
                "retries": 0,
                "root_id": "<header>",
            }
        ],
    },
    # a chain body: its last task has the header's group; a chord in a group: its body has
    # the group's id and position
    "chord_body_request_in_a_chain_or_group": {
        "get": {"returns": [6, [6, 10]]},
        "chain_body": [
            {**REQUEST, "group": "<header_group>", "id": "<last>"},
            {**REQUEST, "id": "<first>"},
        ],
        "header": [{"group": "<header_group>", "group_index": 0}],
        "grouped_body": [{**REQUEST, "group": "<outer_group>", "group_index": 0, "id": "<grouped_body>"}],
    },
}


# Where pgtasks does otherwise (docs/celery-migration.md says so too).
PGTASKS: dict[str, dict[str, Any]] = {
    # a requeue counts as a retry (request.retries grows), its parent kept
    "requeued_task_request": {
        "runs": [
            {**REQUEST, "id": "<task>", "parent_id": None, "retries": 0, "root_id": "<task>"},
            {**REQUEST, "id": "<task>", "parent_id": None, "retries": 1, "root_id": "<task>"},
        ],
    },
    # a row has one outcome: retry(throw=False)'s retry is a new task under its own id
    "retry_without_throw": {
        "runs": [
            {**REQUEST, "id": "<id>", "parent_id": "<id>", "retries": 1, "root_id": "<task>"},
            {**REQUEST, "id": "<task>", "parent_id": None, "retries": 0, "root_id": "<task>"},
        ],
        "postruns": [
            {"id": "<id>", "retval": "'returned at retries=1'", "state": "SUCCESS"},
            {"id": "<task>", "retval": "'returned at retries=0'", "state": "SUCCESS"},
        ],
    },
}


def run(name: str, ledger: Path) -> dict[str, Any]:
    return SCENARIOS[name](Probe(ledger))


def main(names: list[str]) -> None:
    ledger = Path(os.environ["PGTASKS_TEST_LEDGER"])
    observed: dict[str, Any] = {}
    for name in names or list(SCENARIOS):
        try:
            observed[name] = run(name, ledger)
        except Exception as exc:  # the reference run reports it instead of stopping
            observed[name] = {"scenario raised": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(observed))


if __name__ == "__main__":  # the reference run
    from tests.compat.apps import edges_probe  # the module the scenarios registered in

    edges_probe.main(sys.argv[1:])
