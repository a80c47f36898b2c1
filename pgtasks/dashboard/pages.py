"""The dashboard's HTML pages (Overview, Queues, Tasks, Task, Workers, Schedules, Dead
letters), the JSON the pages poll for live updates, and the actions their forms post."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from pgtasks.dashboard.canvas_graph import graph_svg
from pgtasks.dashboard.charts import activity_svg
from pgtasks.dashboard.console import Console, TaskFilter
from pgtasks.dashboard.formatting import age, duration, iso, kept, kept_input, millis, pretty
from pgtasks.dashboard.http import text_response
from pgtasks.dashboard.security import READ_ONLY, Guard
from pgtasks.engine.errors import ConfigurationError, PgtasksError
from pgtasks.engine.flow import parse_rate_limit, parse_result_expires
from pgtasks.sysdb.records import Status

DEAD = Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED.value
RECENT_SHOWN = 10  # failures and tasks the overview lists


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("pgtasks.dashboard", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters.update(iso=iso, age=age, pretty=pretty, millis=millis)
    env.globals.update(
        duration=duration, kept=kept, kept_input=kept_input, statuses=[s.value for s in Status]
    )
    return env


class Pages:
    """Renders pages with ``console`` data and runs actions under ``guard``."""

    def __init__(self, console: Console, guard: Guard) -> None:
        self.console = console
        self.guard = guard
        self.templates = _environment()

    def routes(self) -> list[Route]:
        return [
            Route("/", self.overview),
            Route("/queues", self.queues),
            Route("/tasks", self.tasks),
            Route("/task/{task_id:path}", self.task),
            Route("/workers", self.workers),
            Route("/worker/{name:path}", self.workers),  # Flower's page of one worker
            Route("/broker", self.queues),  # Flower's page of the broker's queues
            Route("/schedules", self.schedules),
            Route("/dead-letters", self.dead_letters),
            Route("/live", self.live),
            Route("/live/tasks", self.live_tasks),
            Route("/live/workers", self.live_workers),
            Route("/action/{kind}", self.action, methods=["POST"]),
        ]

    def _render(self, name: str, request: Request, **context: Any) -> HTMLResponse:
        page = self.templates.get_template(name).render(
            request=request,
            csrf=self.guard.csrf_token,
            read_only=self.guard.read_only,
            now=iso(self.console.now_ms()),
            **context,
        )
        return HTMLResponse(page)

    # -- pages --------------------------------------------------------------------------
    def overview(self, request: Request) -> Response:
        return self._render("overview.html", request, **self._overview_data(), **self._overview_tasks())

    def _overview_data(self) -> dict[str, Any]:
        activity = self.console.activity()
        return {
            "queues": self.console.queues(),
            "latency": self.console.latency(),
            "charts": {queue: activity_svg(series) for queue, series in activity.items()},
            "workers": self.console.workers(),
            "schedules": [s for s in self.console.schedules() if s[1] is not None][:10],
        }

    def _overview_tasks(self) -> dict[str, Any]:
        """What the overview lists below the queues: the latest failures and tasks."""
        return {
            "failures": self.console.tasks(TaskFilter(statuses=("ERROR", DEAD)), limit=RECENT_SHOWN)[0],
            "recent": self.console.tasks(TaskFilter(), limit=RECENT_SHOWN)[0],
        }

    def live(self, request: Request) -> Response:
        """What the pages' script updates in place: the counts, ages and charts."""
        data = self._overview_data()
        values: dict[str, str] = {}
        for row in data["queues"]:
            for state, n in row.counts.items():
                values[f"count:{row.settings.name}:{state}"] = str(n)
            values[f"oldest:{row.settings.name}"] = age(row.oldest_waiting_seconds)
            values[f"paused:{row.settings.name}"] = "paused" if row.settings.paused else "active"
            lat = data["latency"].get(row.settings.name)
            values[f"p50:{row.settings.name}"] = millis(lat.p50_ms if lat else None)
            values[f"p95:{row.settings.name}"] = millis(lat.p95_ms if lat else None)
        values["workers-online"] = str(len(data["workers"]))
        return JSONResponse({"values": values, "charts": data["charts"], "now": iso(self.console.now_ms())})

    def queues(self, request: Request) -> Response:
        return self._render("queues.html", request, queues=self.console.queues())

    def tasks(self, request: Request) -> Response:
        q = request.query_params
        wanted = q.get("id", "").strip()
        if wanted:
            if self.console.record(wanted) is not None:
                return RedirectResponse(f"/task/{wanted}", 303)
            return self._render(
                "tasks.html", request, tasks=[], next_url=None, f=TaskFilter(), missing=wanted
            )
        try:
            f = _task_filter(q)
            rows, key = self.console.tasks(f)
        except ValueError as exc:  # a ConfigurationError too: a malformed filter or key
            return PlainTextResponse(f"bad filter: {exc}", 400)
        next_url = None
        if key is not None:
            params = {k: v for k, v in q.items() if k != "key" and v}
            next_url = "/tasks?" + urlencode({**params, "key": key})
        region = "/live/tasks?" + urlencode({k: v for k, v in q.items() if v})
        return self._render(
            "tasks.html", request, tasks=rows, next_url=next_url, f=f, missing=None, region=region
        )

    def live_tasks(self, request: Request) -> Response:
        """The rows of the Tasks page for its filters and page, for live updates."""
        try:
            rows, _ = self.console.tasks(_task_filter(request.query_params))
        except ValueError as exc:
            return PlainTextResponse(f"bad filter: {exc}", 400)
        return self._fragment("tasks_rows.html", tasks=rows)

    def live_workers(self, request: Request) -> Response:
        """The rows of the Workers page, for live updates."""
        return self._fragment("workers_rows.html", workers=self.console.workers())

    def _fragment(self, name: str, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(**context)
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    def task(self, request: Request) -> Response:
        try:
            view = self.console.task(request.path_params["task_id"])
        except ConfigurationError:  # an id no task can have (a NUL in it)
            view = None
        if view is None:
            return PlainTextResponse("no such task", 404)
        return self._render("task.html", request, t=view, r=view.record, graph=graph_svg(view.graph))

    def workers(self, request: Request) -> Response:
        return self._render("workers.html", request, workers=self.console.workers())

    def schedules(self, request: Request) -> Response:
        return self._render("schedules.html", request, schedules=self.console.schedules())

    def dead_letters(self, request: Request) -> Response:
        rows, _ = self.console.tasks(TaskFilter(status=DEAD), limit=200)
        return self._render("dead.html", request, tasks=rows)

    # -- actions ------------------------------------------------------------------------
    async def action(self, request: Request) -> Response:
        form = {k: v[-1] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
        if self.guard.read_only:
            return text_response(READ_ONLY, 403)
        if not self.guard.csrf_ok(form.get("csrf")):  # cross-site requests: refused by the gate
            return text_response("missing or wrong CSRF token: reload the page and try again", 403)
        kind = request.path_params["kind"]
        back = form.get("next", "/")
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        try:
            message = await run_in_threadpool(self._act, kind, form)
        except (PgtasksError, ValueError, KeyError) as exc:
            return PlainTextResponse(f"{kind}: {exc}", 400)
        if message is None:
            return PlainTextResponse(f"unknown action {kind!r}", 404)
        if message == "False":
            return PlainTextResponse(
                f"{kind}: nothing to do (the task's state forbids it, or it does not exist)", 409
            )
        return RedirectResponse(back, 303)

    def _act(self, kind: str, form: dict[str, str]) -> str | None:
        c = self.console
        if kind == "cancel":
            return str(c.cancel(form["task_id"]))
        if kind == "resume":
            return str(c.resume(form["task_id"]))
        if kind == "resume-many":
            ids = [i for i in form.get("task_ids", "").split(",") if i]
            return str(sum(c.resume(i) for i in ids))
        if kind == "fork":
            return c.fork(form["task_id"], int(form.get("start_step", "1")))
        if kind == "retry":
            return c.retry(form["task_id"])
        if kind == "terminate":
            return str(c.terminate(form["task_id"]))
        if kind in ("queue-pause", "queue-resume"):
            c.set_queue_paused(form["queue"], kind == "queue-pause")
            return kind
        if kind == "queue-limits":
            changes: dict[str, Any] = {}
            for field in ("concurrency", "worker_concurrency"):
                text = form.get(field, "").strip()
                changes[field] = int(text) if text else None
            rate = form.get("rate_limit", "").strip() or None
            changes["rate_limit_max"], changes["rate_limit_period_sec"] = parse_rate_limit(rate)
            changes["partition_queue"] = form.get("partitioned") == "on"
            if "result_expires" in form:  # a form of an older page may lack it: keep the value
                changes["result_expires_sec"] = parse_result_expires(form["result_expires"], "kept")
            c.set_queue_limits(form["queue"], changes)
            return kind
        if kind in ("schedule-pause", "schedule-resume"):
            c.set_schedule_paused(form["schedule"], kind == "schedule-pause")
            return kind
        if kind == "schedule-trigger":
            return c.trigger_schedule(form["schedule"])
        if kind == "schedule-backfill":
            since = _datetime(form.get("since"), "since")
            if since is None:
                raise ValueError("since is required: the start of the window to backfill")
            c.backfill_schedule(form["schedule"], since, _datetime(form.get("until"), "until"))
            return kind
        return None


def _task_filter(q: Mapping[str, str]) -> TaskFilter:
    """The Tasks page's filters from its query string (ValueError when one is malformed)."""
    f = TaskFilter(
        status=q.get("status") or None,
        queue=q.get("queue") or None,
        name=q.get("name") or None,
        worker=q.get("worker") or None,
        created_after=_datetime(q.get("after")),
        created_before=_datetime(q.get("before")),
        after=q.get("key") or None,
    )
    if f.status is not None:
        Status(f.status)
    return f


def _datetime(text: str | None, field: str = "time") -> dt.datetime | None:
    """An ISO date-time from a form (naive: UTC); None when empty."""
    if not text or not text.strip():
        return None
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{field} must be an ISO date-time such as 2026-01-31T03:00, not {text!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
