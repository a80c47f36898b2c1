"""Celery's ``self.request.chain`` and ``self.request.callbacks`` in a chain's tasks, and the
idiom of clearing them to stop what follows (``self.request.chain = None``).

pgtasks plans a whole chain into rows when it is sent, so the rest of a chain is already in
the database while a task of it runs. The planner stores with each single task of a chain the
steps after it as Celery's messages carry them (signature dicts, the next one last, each
task with its id) and the ids of the next step's first tasks; with a task that has ``link``
callbacks, their ids. The worker hands them to the request, and when the task succeeds with
``request.chain`` (or ``request.callbacks``) cleared, the tasks that would have followed are
revoked: they never run, and neither does anything waiting on them (Celery never sends them,
so it reads them PENDING; pgtasks reads them REVOKED).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.task import Context, Task

LINKS_KEY = "links"  # the meta key of a task's linked signatures (bridge/worker_request.py)
CHAIN_KEY = "chain"  # the meta key of the steps after a chain's task, the next one last
CHAIN_NEXT_KEY = "chain_next"  # ... of the ids of the next step's first tasks
CALLBACK_IDS_KEY = "callback_ids"  # ... of the first tasks of its link= callbacks
MAX_CHAIN_SHOWN = 50  # steps kept in a task's request.chain: a long chain's nearest ones

log = logging.getLogger("pgtasks.compat")


def step_description(step: Any, task_id: str | None) -> dict[str, Any]:
    """A chain step as Celery's ``request.chain`` holds it: its signature dict, with the id
    of its task when it is a single task."""
    described = dict(step)
    if task_id is not None:
        described["options"] = {**dict(described.get("options") or {}), "task_id": task_id}
    return described


def links_of(request: Context) -> tuple[list[Any], list[Any]]:
    """The chain and callbacks a request started with, to compare with what the task left."""
    return list(request.chain or ()), list(request.callbacks or ())


def stop_cleared_links(task: Task, request: Context, started_with: tuple[list[Any], list[Any]]) -> None:
    """After a success: revoke what follows a task whose ``request.chain`` or
    ``request.callbacks`` it cleared (None or empty); other changes to them are not acted on
    (the rest of the chain was planned when it was sent), and say so."""
    chain, callbacks = started_with
    stopped: list[str] = []
    if chain and not request.chain:
        stopped += list(getattr(request, "pgtasks_chain_next", None) or ())
    elif chain and list(request.chain) != chain:
        log.warning(
            "task %s[%s] changed self.request.chain: pgtasks runs the chain planned when it "
            "was sent; only clearing it (None or []) is acted on (it stops the chain)",
            task.name,
            request.id,
        )
    if callbacks and not request.callbacks:
        stopped += list(getattr(request, "pgtasks_callback_ids", None) or ())
    admin = task.app.engine.admin
    for task_id in stopped:
        admin.cancel(task_id)
