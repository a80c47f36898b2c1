"""Celery's ``self.request.chain`` and ``self.request.callbacks`` in a chain's tasks, and the
idiom of clearing them to stop what follows (``self.request.chain = None``).

pgtasks plans a whole chain into rows when it is sent, so the rest of a chain is already in
the database while a task of it runs. The planner stores with each single task of a chain the
steps after it as Celery's messages carry them (signature dicts, the next one last, each
task with its id; the nearest ones, within a budget) and the ids of the next step's first
tasks; with a task that has ``link`` callbacks, their ids. The worker hands them to the
request. When the task ends (succeeds, or asks to be retried) with ``request.chain`` (or
``request.callbacks``) cleared, what would have followed is revoked, last first: every task
downstream of the next step ends REVOKED before the one it waits on, so nothing runs and no
chord fails or calls its errbacks for it (Celery never sends them and reads them PENDING).
A task that handed its chain to another send (``apply_async(chain=self.request.chain)``,
which pgtasks does not carry out) keeps it: the rest then runs after it, as before.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery._state import current_request

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Context, Task

LINKS_KEY = "links"  # the meta key of a task's linked signatures (bridge/worker_request.py)
CHAIN_KEY = "chain"  # the meta key of the steps after a chain's task, the next one last
CHAIN_NEXT_KEY = "chain_next"  # ... of the ids of the next step's first tasks
CALLBACK_IDS_KEY = "callback_ids"  # ... of the first tasks of its link= callbacks
MAX_CHAIN_SHOWN = 10  # steps kept in a task's request.chain: a long chain's nearest ones
CHAIN_SHOWN_BUDGET = 16 * 1024  # characters of them (arguments included) at most per task
HANDED_OFF = "pgtasks_chain_handed_off"  # set on a request whose chain was given to a send

log = logging.getLogger("pgtasks.compat")


def step_description(step: Any, task_id: str | None) -> dict[str, Any]:
    """A chain step as Celery's ``request.chain`` holds it: its signature dict, with the id
    of its task when it is a single task."""
    described = dict(step)
    if task_id is not None:
        described["options"] = {**dict(described.get("options") or {}), "task_id": task_id}
    return described


def shown_steps(described: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nearest of ``described`` (the steps after a task, next first) that fit the budget,
    the next one last as Celery's ``request.chain``; none that JSON cannot carry. The next
    step is always there (without its arguments if it must), so the chain reads non-empty
    and clearing it is seen."""
    kept: list[dict[str, Any]] = []
    used = 0
    for step in described[:MAX_CHAIN_SHOWN]:
        try:
            used += len(json.dumps(step, default=str))
        except (TypeError, ValueError):  # a key JSON has no form for (a pickle app's args)
            break
        if used > CHAIN_SHOWN_BUDGET:
            break
        kept.append(step)
    if not kept and described:
        kept = [{**described[0], "args": [], "kwargs": {}}]
    return list(reversed(kept))


def note_chain_handed_off() -> None:
    """``apply_async(chain=...)`` inside a running task: its chain is not to be stopped."""
    request = current_request()
    if request is not None and request.chain:
        setattr(request, HANDED_OFF, True)


def links_of(request: Context) -> tuple[list[Any], list[Any]]:
    """The chain and callbacks a request started with, to compare with what the task left."""
    return list(request.chain or ()), list(request.callbacks or ())


def stop_cleared_links(task: Task, request: Context, started_with: tuple[list[Any], list[Any]]) -> None:
    """When the task ends (a success, or a retry it asked for): revoke what follows it if it
    cleared ``request.chain`` or ``request.callbacks`` (None or empty). Other changes to
    them are not acted on (the rest of the chain was planned when it was sent): said once."""
    chain, callbacks = started_with
    starts: list[str] = []
    if chain and not request.chain:
        if getattr(request, HANDED_OFF, False):
            log.warning(
                "task %s[%s] handed its chain to apply_async(chain=...), which pgtasks does not "
                "carry out: the rest of its chain runs after it",
                task.name,
                request.id,
            )
        else:
            starts += list(getattr(request, "pgtasks_chain_next", None) or ())
    elif chain and list(request.chain) != chain:
        log.warning(
            "task %s[%s] changed self.request.chain: pgtasks runs the chain planned when it "
            "was sent; only clearing it (None or []) is acted on (it stops the chain)",
            task.name,
            request.id,
        )
    if callbacks and not request.callbacks:
        starts += list(getattr(request, "pgtasks_callback_ids", None) or ())
    if starts:
        revoke_downstream(task, starts)


def revoke_downstream(task: Task, starts: list[str]) -> None:
    """Revoke ``starts`` and every task waiting on them (chains, chord bodies), the farthest
    first, so that each is cancelled before what it waits on ends: none runs, and none is
    failed as a dependency of a revoked task (with its errbacks called)."""
    admin = task.app.engine.admin
    order: list[str] = []
    seen: set[str] = set()
    frontier = [t for t in starts if t not in seen]
    while frontier:
        following: list[str] = []
        for task_id in frontier:
            if task_id in seen:
                continue
            seen.add(task_id)
            order.append(task_id)
            following += admin.children(task_id)
        frontier = following
    for task_id in reversed(order):
        admin.cancel(task_id)
