"""Flower's REST API on the dashboard, for scripts written against Flower: the endpoints and
JSON shapes of Flower 2 (``flower/api/tasks.py``, ``workers.py``), answered from the task
rows. Flower's ``offset`` is served without SQL OFFSET: pages are walked by key, and the key
of the next page is returned in the ``X-Pgtasks-Next`` header (pass it back as ``after``)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pgtasks.dashboard.console import Console, TaskFilter
from pgtasks.dashboard.formatting import iso
from pgtasks.dashboard.security import Guard, refuse, same_origin
from pgtasks.engine.errors import PgtasksError
from pgtasks.management import TaskInfo

# pgtasks status -> the state names Flower reports, and back (Flower filters by them).
FLOWER_STATE = {
    "ENQUEUED": "PENDING",
    "DELAYED": "PENDING",
    "WAITING": "PENDING",
    "PENDING": "STARTED",
    "SUCCESS": "SUCCESS",
    "ERROR": "FAILURE",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "FAILURE",
    "CANCELLED": "REVOKED",
}
STATUSES_OF = {
    state: tuple(s for s, c in FLOWER_STATE.items() if c == state) for state in set(FLOWER_STATE.values())
}
MAX_OFFSET = 10_000
WALK_PAGE = 500


class FlowerApi:
    """The ``/api/...`` routes."""

    def __init__(self, console: Console, guard: Guard) -> None:
        self.console = console
        self.guard = guard

    def routes(self) -> list[Route]:
        return [
            Route("/api/workers", self.workers),
            Route("/api/tasks", self.tasks),
            Route("/api/task/info/{task_id:path}", self.info),
            Route("/api/task/result/{task_id:path}", self.result),
            Route("/api/task/async-apply/{name:path}", self.async_apply, methods=["POST"]),
            Route("/api/task/revoke/{task_id:path}", self.revoke, methods=["POST"]),
            Route("/api/queues/length", self.queue_lengths),
        ]

    def workers(self, request: Request) -> Response:
        registered = self.console.registered()
        out = {}
        for e, _, running in self.console.workers():
            out[e.executor_id] = {
                "stats": {"hostname": e.hostname, "pid": e.pid, "clock": e.last_heartbeat},
                "active_queues": [{"name": q} for q in e.queues],
                "registered": registered,
                "active": [self._task(r, with_worker=True) for r in running],
                "scheduled": [],
                "reserved": [],
                "revoked": [],
                "conf": {},
                "timestamp": e.last_heartbeat / 1000,
            }
        return JSONResponse(out)

    def tasks(self, request: Request) -> Response:
        q = request.query_params
        try:
            limit = int(q.get("limit") or 100)
            offset = int(q.get("offset") or 0)
            if limit < 1 or offset < 0:
                raise ValueError("limit must be >= 1 and offset >= 0")
            if offset > MAX_OFFSET:
                raise ValueError(f"offset is at most {MAX_OFFSET}; page with the X-Pgtasks-Next key instead")
            state = q.get("state")
            state = None if state in (None, "", "All") else state
            if state is not None and state not in STATUSES_OF:
                raise ValueError(f"unknown state {state!r}; one of {sorted(STATUSES_OF)}")
            f = TaskFilter(
                statuses=STATUSES_OF[state] if state else (),
                name=None if q.get("taskname") in (None, "All") else q.get("taskname"),
                worker=None if q.get("workername") in (None, "All") else q.get("workername"),
                after=q.get("after") or None,
            )
            rows, next_key = self._walk(f, offset, limit)
        except ValueError as exc:  # a ConfigurationError too: a malformed `after`
            return JSONResponse({"error": str(exc)}, 400)
        headers = {"X-Pgtasks-Next": next_key} if next_key else {}
        return JSONResponse({r.task_id: self._task(r, with_worker=True) for r in rows}, headers=headers)

    def _walk(self, f: TaskFilter, offset: int, limit: int) -> tuple[list[TaskInfo], str | None]:
        key = f.after
        while offset > 0:
            skipped, key = self.console.tasks(_with_key(f, key), limit=min(offset, WALK_PAGE))
            offset -= len(skipped)
            if key is None:
                return [], None
        return self.console.tasks(_with_key(f, key), limit=limit)

    def info(self, request: Request) -> Response:
        view = self.console.task(request.path_params["task_id"])
        if view is None:
            return JSONResponse({"error": "unknown task"}, 404)
        body = self._task(view.record, with_worker=True)
        body["children"] = view.children
        return JSONResponse(body)

    def result(self, request: Request) -> Response:
        task_id = request.path_params["task_id"]
        record = self.console.record(task_id)
        if record is None:
            return JSONResponse({"task-id": task_id, "state": "PENDING"})
        state = FLOWER_STATE.get(record.status.value, "PENDING")
        body: dict[str, Any] = {"task-id": task_id, "state": state}
        if state == "SUCCESS":
            body["result"] = _value(record.output)
        elif state in ("FAILURE", "REVOKED"):
            summary, traceback = _error(record.error)
            body["result"] = summary
            if state == "FAILURE":
                body["traceback"] = traceback
        return JSONResponse(body)

    async def async_apply(self, request: Request) -> Response:
        if (denied := self._may_act(request)) is not None:
            return denied
        name = request.path_params["name"]
        try:
            raw = await request.body()
            options = json.loads(raw) if raw else {}
            if not isinstance(options, dict):
                raise ValueError("the body must be a JSON object")
            args = options.pop("args", [])
            kwargs = options.pop("kwargs", {})
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ValueError("args must be an array and kwargs an object")
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        if self.console.registered() and name not in self.console.registered():
            return JSONResponse({"error": f"Unknown task '{name}'"}, 404)
        try:
            task_id = await run_in_threadpool(self.console.send, name, args, kwargs, **options)
        except PgtasksError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        return JSONResponse({"task-id": task_id, "state": "PENDING"})

    async def revoke(self, request: Request) -> Response:
        if (denied := self._may_act(request)) is not None:
            return denied
        task_id = request.path_params["task_id"]
        form = request.query_params
        terminate = form.get("terminate", "false").lower() in ("1", "true", "yes")
        signal = form.get("signal", "SIGTERM")
        await run_in_threadpool(self.console.revoke, task_id, terminate, signal)
        return JSONResponse({"message": f"Revoked '{task_id}'"})

    def queue_lengths(self, request: Request) -> Response:
        rows = self.console.queues()
        return JSONResponse(
            {
                "active_queues": [
                    {"name": r.settings.name, "messages": r.counts["ENQUEUED"] + r.counts["DELAYED"]}
                    for r in rows
                ]
            }
        )

    def _may_act(self, request: Request) -> Response | None:
        if self.guard.read_only:
            return refuse(403, "the dashboard is read-only")
        if not same_origin(request):
            return refuse(403, "cross-site request refused")
        return None

    def _task(self, r: TaskInfo, with_worker: bool) -> dict[str, Any]:
        state = FLOWER_STATE.get(r.status.value, "PENDING")
        args, kwargs = _inputs(self.console.arguments(r))
        finished = r.status.value in ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
        summary, traceback = _error(r.error)
        body: dict[str, Any] = {
            "uuid": r.task_id,
            "name": r.name,
            "state": state,
            "received": r.created_at / 1000,
            "sent": None,
            "started": _seconds(r.started_at_epoch_ms),
            "rejected": None,
            "succeeded": r.updated_at / 1000 if state == "SUCCESS" else None,
            "failed": r.updated_at / 1000 if state == "FAILURE" else None,
            "retried": None,
            "revoked": r.updated_at / 1000 if state == "REVOKED" else None,
            "args": args,
            "kwargs": kwargs,
            "eta": _iso(r.delay_until_epoch_ms),
            "expires": _iso(r.expires_at_epoch_ms),
            "retries": r.retries,
            "result": r.output if state == "SUCCESS" else None,
            "exception": summary or None,
            "timestamp": r.updated_at / 1000,
            "runtime": (r.updated_at - r.started_at_epoch_ms) / 1000
            if finished and r.started_at_epoch_ms
            else None,
            "traceback": traceback,
            "exchange": None,
            "routing_key": r.queue_name,
            "clock": r.updated_at,  # Flower's is the clock of the task's last event
            "client": None,
            "root": r.root_task_id or r.task_id,
            "root_id": r.root_task_id or r.task_id,
            "parent": r.parent_task_id,
            "parent_id": r.parent_task_id,
            "children": [],
        }
        if with_worker:
            body["worker"] = r.executor_id
        return body


def _with_key(f: TaskFilter, key: str | None) -> TaskFilter:
    return replace(f, after=key)


def _inputs(text: str) -> tuple[str, str]:
    """Flower shows args and kwargs as text; ours are the stored JSON (secrets masked)."""
    try:
        data = json.loads(text)
        return json.dumps(data.get("args", [])), json.dumps(data.get("kwargs", {}))
    except (ValueError, AttributeError):
        return text, "{}"


def _value(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _error(text: str | None) -> tuple[str, str | None]:
    if not text:
        return "", None
    try:
        data = json.loads(text)
        return f"{data.get('type')}({data.get('message', '')!r})", data.get("traceback") or None
    except (ValueError, AttributeError):
        return text[:200], None


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _iso(ms: int | None) -> str | None:
    return iso(ms) or None
