"""Flower 2.2's REST API on the dashboard, for the scripts, boards and alerts written against
Flower: every endpoint of its API reference with its arguments, status codes, error texts and
JSON shapes, answered from pgtasks' tables (tasks in Celery's states and formats: see
``flower_tasks``; workers as Celery's ``inspect`` describes them: see ``worker_view``). Worker
controls travel to the worker through the database (``TaskManagement.control_worker``) and
answer with the worker's reply. The HTTP conventions (the gate, headers, argument parsing,
errors) are in ``http``."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pgtasks import worker_reports
from pgtasks.dashboard import task_search
from pgtasks.dashboard.console import Console
from pgtasks.dashboard.flower_tasks import (
    FLOWER_STATES,
    STATUS_ORDER,
    STATUSES_OF_STATE,
    TaskView,
    exception_repr,
    not_registered,
    result_state,
    result_value,
    revoked_repr,
)
from pgtasks.dashboard.http import (
    Arguments,
    Handler,
    HttpError,
    in_thread,
    json_response,
    not_found_page,
    strtobool,
    text_response,
)
from pgtasks.dashboard.security import Guard
from pgtasks.engine.errors import PgtasksError
from pgtasks.management import TaskInfo
from pgtasks.sysdb.records import Status

SORT_FIELDS = {"name": "name", "state": "status", "received": "received", "started": "started"}
RECEIVED_FORMAT = "%Y-%m-%d %H:%M"
FLOWER_DATE_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
# The options of Celery's apply_async pgtasks acts on; Flower passes any other to Celery, which
# ignores those it does not know: so does pgtasks.
SEND_OPTIONS = ("task_id", "queue", "countdown", "eta", "priority", "expires")
PAGE_NUMBER_MAX = 2**31 - 1  # the largest limit or offset a listing passes to the database
CONTROL_TIMEOUT = 10.0  # seconds a worker control waits for the worker's reply
RUNNING = (Status.PENDING,)  # a claimed task: listed whatever max_tasks


@dataclass(frozen=True, slots=True)
class FlowerSettings:
    """Flower's options the API uses: ``max_tasks``, the tasks it lists (the newest this many,
    as Flower keeps this many in memory, and every running task; 0: only the running ones)."""

    max_tasks: int = 100_000


Method = Callable[[Request], Awaitable[Response]]


class Endpoint(Handler):
    """A Flower handler made of a ``get`` and/or a ``post`` coroutine. ``empty_path``: whether
    its path parameter may be empty; Flower's routes end in ``(.+)`` but for ``task/info``,
    so an empty one matches no route there and gets Flower's 404 page."""

    def __init__(
        self, guard: Guard, get: Method | None = None, post: Method | None = None, *, api: bool = True,
        public: bool = False, method_not_allowed: tuple[bytes, str] | None = None, empty_path: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(guard)
        self.api, self.public, self.changes_state = api, public, post is not None
        self.empty_path = empty_path
        if get is not None:
            self.get = get
        if post is not None:
            self.post = post
        if method_not_allowed is not None:
            self.method_not_allowed = method_not_allowed

    async def dispatch(self, request: Request) -> Response:
        if not self.empty_path and "" in request.path_params.values():
            return not_found_page()
        return await super().dispatch(request)


class FlowerApi:
    """The ``/api/...`` routes and ``/healthcheck``."""

    def __init__(self, console: Console, guard: Guard, settings: FlowerSettings | None = None) -> None:
        self.console = console
        self.manager = console.manager
        self.guard = guard
        self.settings = settings or FlowerSettings()
        self.seen_workers: set[str] = set()  # Flower's event state keeps stopped workers listed
        self.inspected: set[str] = set()  # workers refreshed by name: their task lists are shown

    def routes(self) -> list[Route]:
        g = self.guard

        def route(path: str, **methods: Any) -> Route:
            return Route(path, Endpoint(g, **methods))

        worker_controls = [
            route(f"/api/worker/{action}/{{name:path}}", post=self._control(action))
            for action in ("shutdown", "pool/restart", "pool/grow", "pool/shrink", "pool/autoscale",
                           "queue/add-consumer", "queue/cancel-consumer")
        ]  # fmt: skip
        plain_none = (b"None", "text/plain; charset=UTF-8")
        return [
            route("/api/workers", get=self.workers),
            *worker_controls,
            route("/api/tasks", get=self.tasks),
            route("/api/task/types", get=self.task_types),
            route("/api/queues/length", get=self.queue_lengths),
            route("/api/task/info/{task_id:path}", get=self.info, empty_path=True),
            route("/api/task/info", get=self.info),
            route("/api/task/apply/{name:path}", post=self.apply),
            route("/api/task/async-apply/{name:path}", post=self.async_apply),
            route("/api/task/send-task/{name:path}", post=self.send_task),
            route("/api/task/result/{task_id:path}", get=self.result),
            route("/api/task/abort/{task_id:path}", post=self.abort),
            route("/api/task/timeout/{name:path}", post=self.set_timeout),
            route("/api/task/rate-limit/{name:path}", post=self.rate_limit),
            route("/api/task/revoke/{task_id:path}", post=self.revoke),
            Route("/healthcheck", Endpoint(g, get=self.healthcheck, api=False, public=True,
                                           method_not_allowed=plain_none)),
        ]  # fmt: skip

    # -- workers ----------------------------------------------------------------------------
    async def workers(self, request: Request) -> Response:
        a = Arguments(request)
        refresh = a.get("refresh", False, strtobool)
        status = a.get("status", False, strtobool)
        name = a.get("workername")
        return json_response(await in_thread(self._workers, refresh, status, name))

    def _workers(self, refresh: bool, status: bool, name: str | None) -> dict[str, Any]:
        everyone = self.manager.all_workers()
        self.seen_workers.update(e.executor_id for e, _ in everyone)
        if status:
            alive = {e.executor_id: live for e, live in everyone}
            return {w: alive.get(w, False) for w in sorted(self.seen_workers)}
        everyone_live = [e for e, ok in everyone if ok]
        live = everyone_live
        if name is not None:
            live = [e for e in live if e.executor_id == name]
            if not live:
                raise HttpError(404, f"Unknown worker '{name}'")
            if refresh:
                self.inspected.add(name)
        now = self.manager.now_ms()
        out = {}
        waiting: worker_reports.Waiting | None = None  # read once, for the inspected workers
        for e in live:
            details = worker_reports.details_of(e)
            body = worker_reports.worker_object(e, details, now, time.time())
            if e.executor_id in self.inspected:
                # the holder of a queue's countdown tasks among all live workers, not only those asked
                waiting = waiting or worker_reports.waiting_of(self.manager, everyone_live)
                body.update(self._task_lists(e, details, waiting))
            out[e.executor_id] = body
        return out

    def _task_lists(self, e: Any, details: dict[str, Any], waiting: worker_reports.Waiting) -> dict[str, Any]:
        """``active``, ``scheduled``, ``reserved`` and ``revoked`` of one worker (see
        :func:`pgtasks.worker_reports.task_lists`); a running task's arguments as reprs."""
        shown = self.manager.shown_inputs

        def inputs(task: Any) -> tuple[Any, Any]:
            text = shown(task)
            return worker_reports.inputs_of(text) or (text, {})

        return worker_reports.task_lists(self.manager, e, details, waiting, inputs, running_reprs=True)

    def _known_worker(self, name: str) -> None:
        if not any(e.executor_id == name for e in self.manager.list_workers()):
            raise HttpError(404, f"Unknown worker '{name}'")

    def _control(self, action: str) -> Method:
        async def control(request: Request) -> Response:
            name = request.path_params["name"]
            await in_thread(self._known_worker, name)
            a = Arguments(request)
            if action == "shutdown":
                await in_thread(self.manager.control_worker, name, "shutdown", {}, None)
                return json_response({"message": "Shutting down!"})
            command, arguments, done, failed = _control_texts(action, name, a)
            reply = await in_thread(self.manager.control_worker, name, command, arguments, CONTROL_TIMEOUT)
            if reply is not None and "ok" in reply:
                return json_response({"message": done or str(reply["ok"])})
            why = "no reply from the worker" if reply is None else str(reply.get("error"))
            raise HttpError(403, f"{failed}: {why}", "text/html; charset=UTF-8")

        return control

    # -- tasks --------------------------------------------------------------------------------
    async def tasks(self, request: Request) -> Response:
        a = Arguments(request)
        # Flower takes any integer; past a database integer, any page is smaller than that.
        limit = a.get("limit", None, int)
        limit = None if limit is None else min(limit, PAGE_NUMBER_MAX)
        offset = min(a.get("offset", 0, int), PAGE_NUMBER_MAX)
        sort_by = a.get("sort_by")
        worker = a.get("workername")
        name = a.get("taskname")
        state = a.get("state")
        received = (a.get("received_start"), a.get("received_end"))
        query = a.get("search", None, escape=False)
        order, descending = "updated", True
        if sort_by:
            field = sort_by.removeprefix("-")
            if field not in SORT_FIELDS:
                raise HttpError(
                    400, f"Invalid sort_by '{sort_by}', expected one of {', '.join(sorted(SORT_FIELDS))}"
                )
            order, descending = SORT_FIELDS[field], sort_by.startswith("-")
        try:
            after, before = (_local_minute(r) for r in received)
        except ValueError:
            raise HttpError(
                400, "Invalid received_start or received_end, expected format 'YYYY-MM-DD HH:MM'"
            ) from None
        try:
            predicate = task_search.parse(query or "")
        except task_search.SearchError as exc:
            raise HttpError(400, json.dumps({"error": str(exc)}), "application/json; charset=UTF-8") from None
        state = None if state in (None, "", "All") else state.upper()
        # Flower 2.2 takes a page of max(limit, 0) tasks: none for 0 or a negative limit.
        if (limit is not None and limit <= 0) or (state is not None and state not in FLOWER_STATES):
            return json_response({})
        statuses = STATUSES_OF_STATE[state] if state else ()
        if self.settings.max_tasks == 0:  # no task kept: only the running ones are listed
            statuses = tuple(status for status in statuses or RUNNING if status in RUNNING)
            if not statuses:
                return json_response({})

        def listing() -> dict[str, Any]:
            exact = state is None or (
                len(STATUSES_OF_STATE[state]) == 1 and state not in ("RECEIVED", "STARTED")
            )
            in_db = predicate is None and exact
            found = self.manager.recent_tasks(
                window=max(1, self.settings.max_tasks),  # and every running task, whatever the window
                order_by=order,
                descending=descending,
                status=statuses,
                status_order=STATUS_ORDER,
                name=None if name in (None, "", "All") else name,
                worker=None if worker in (None, "", "All") else worker,
                received_after=after,
                received_before=before,
                limit=limit if in_db else None,
                offset=max(0, offset) if in_db else 0,
            )
            view = self._view()
            out: dict[str, Any] = {}
            skip = 0 if in_db else max(0, offset)
            for task in found:
                body = view.task(task, worker_last=True)
                if (state is not None and body["state"] != state) or (
                    predicate is not None and not predicate(body)
                ):
                    continue
                if skip:
                    skip -= 1
                    continue
                out[task.task_id] = body
                if limit is not None and len(out) >= limit:
                    break
            if sort_by:  # in the values shown (a task refused unknown shows no name nor times)
                field = sort_by.removeprefix("-")
                ordered = sorted(out.values(), key=lambda t: _flower_key(t, field), reverse=descending)
                out = {t["uuid"]: t for t in ordered}
            for task_id, children in self.manager.task_children_many(list(out)).items():
                out[task_id]["children"] = children  # one query for the page
            return out

        return json_response(await in_thread(listing))

    def _view(self) -> TaskView:
        return task_view(self.manager)

    async def task_types(self, request: Request) -> Response:
        def names() -> list[str]:
            if self.settings.max_tasks == 0:  # no task kept: the running ones' names
                running = self.manager.recent_tasks(window=1, status=RUNNING)
                return sorted({task.name for task in running})
            seen = self.manager.recent_task_names(self.settings.max_tasks)
            known: set[str] = set()
            for e in self.manager.list_workers():
                known.update(worker_reports.details_of(e).get("registered") or ())
            # a worker receives only the tasks it knows: the others it refused unseen
            return [n for n in seen if n in known] if known else seen

        return json_response({"task-types": await in_thread(names)})

    async def queue_lengths(self, request: Request) -> Response:
        def lengths() -> list[dict[str, Any]]:
            names: set[str] = set()
            for e in self.manager.list_workers():
                names.update(worker_reports.queues_of(e, worker_reports.details_of(e)))
            counts = {q.settings.name: q.counts.get("ENQUEUED", 0) for q in self.manager.list_queues()}
            if not names:
                names = set(counts) or {"celery"}
            return [{"name": n, "messages": counts.get(n, 0)} for n in sorted(names)]

        return json_response({"active_queues": await in_thread(lengths)})

    async def info(self, request: Request) -> Response:
        task_id = request.path_params.get("task_id", "")

        def read() -> dict[str, Any] | None:
            task = self.manager.get_task(task_id, steps=False) if task_id else None
            if task is None:
                return None
            return self._view().task(task, children=self.manager.task_children(task_id))

        body = await in_thread(read)
        if body is None:
            raise HttpError(404, f"Unknown task '{task_id}'")
        return json_response(body)

    async def result(self, request: Request) -> Response:
        task_id = request.path_params["task_id"]
        timeout = Arguments(request).get("timeout", None, float)
        return json_response(await in_thread(self._result, task_id, timeout))

    def _result(self, task_id: str, timeout: float | None, key_order: str = "state-first") -> dict[str, Any]:
        if timeout:
            _wait(self.manager, task_id, timeout)
        task = self.manager.get_task(task_id, steps=False)
        custom = self.manager.task_custom_state(task_id) if task is not None else None
        state = result_state(task, custom[0] if custom else None)
        body: dict[str, Any] = {"task-id": task_id, "state": state}
        if task is not None and task.status.is_terminal:
            body.update(_outcome(task, state))
        if key_order == "state-last":
            body["state"] = body.pop("state")
        return body

    # -- sending -------------------------------------------------------------------------------
    async def apply(self, request: Request) -> Response:
        name = request.path_params["name"]
        args, kwargs, options = await _body(request)
        timeout = options.pop("timeout", None)
        try:
            timeout = None if timeout is None else float(timeout)
        except (TypeError, ValueError):
            raise HttpError(400, "Invalid timeout") from None
        self._registered(name)
        converted = _converted(options)
        await self._check_arguments(name, args, kwargs)
        task_id = await self._send(name, args, kwargs, converted)
        return json_response(await in_thread(self._applied, task_id, timeout))

    def _applied(self, task_id: str, timeout: float | None) -> dict[str, Any]:
        _wait(self.manager, task_id, timeout)
        body = self._result(task_id, None, "state-last")
        if body["state"] not in ("SUCCESS", "FAILURE", "REVOKED"):
            return {"task-id": task_id, "state": "PENDING"}
        return body

    async def async_apply(self, request: Request) -> Response:
        name = request.path_params["name"]
        args, kwargs, options = await _body(request)
        self._registered(name)
        converted = _converted(options)
        await self._check_arguments(name, args, kwargs)
        task_id = await self._send(name, args, kwargs, converted)
        return json_response(await in_thread(self._sent, task_id))

    async def send_task(self, request: Request) -> Response:
        name = request.path_params["name"]
        args, kwargs, options = await _body(request)
        task_id = await self._send(name, args, kwargs, _converted(options))
        return json_response(await in_thread(self._sent, task_id))

    def _sent(self, task_id: str) -> dict[str, Any]:
        task = self.manager.get_task(task_id, steps=False)
        return {"task-id": task_id, "state": result_state(task)}

    def _registered(self, name: str) -> None:
        registered = self.console.registered()
        if registered and name not in registered:
            raise HttpError(404, f"Unknown task '{name}'")

    async def _check_arguments(self, name: str, args: list[Any], kwargs: Any) -> None:
        """400 with the TypeError the task's ``apply_async`` raises for arguments its function
        cannot take (Flower lets it escape: a 500), before anything is sent."""
        if not isinstance(kwargs, dict):
            return  # answered by _send as Flower answers it
        try:
            await in_thread(self.console.check_arguments, name, args, kwargs)
        except TypeError as exc:
            raise HttpError(400, str(exc)) from None

    async def _send(self, name: str, args: list[Any], kwargs: Any, options: dict[str, Any]) -> str:
        if not isinstance(kwargs, dict):
            raise HttpError(500, "", "text/html; charset=UTF-8")  # Flower does not check kwargs
        try:
            return await in_thread(self.console.send, name, args, kwargs, **options)
        except PgtasksError as exc:
            raise HttpError(400, str(exc)) from None

    # -- acting on tasks --------------------------------------------------------------------------
    async def abort(self, request: Request) -> Response:
        task_id = request.path_params["task_id"]
        await in_thread(self.manager.abort_task, task_id)
        return json_response({"message": f"Aborted '{task_id}'"})

    async def revoke(self, request: Request) -> Response:
        task_id = request.path_params["task_id"]
        a = Arguments(request)
        terminate = a.get("terminate", False, strtobool)
        signal = a.get("signal", "SIGTERM")
        await in_thread(self.console.revoke, task_id, terminate, signal)
        return json_response({"message": f"Revoked '{task_id}'"})

    async def set_timeout(self, request: Request) -> Response:
        name = request.path_params["name"]
        a = Arguments(request)
        worker = a.get("workername", required=True)
        soft = a.get("soft", None, float)
        hard = a.get("hard", None, float)
        return await self._task_control(
            name,
            worker,
            "time_limit",
            {"task_name": name, "soft": soft, "hard": hard},
            "Failed to set timeouts",
        )

    async def rate_limit(self, request: Request) -> Response:
        name = request.path_params["name"]
        a = Arguments(request)
        worker = a.get("workername", required=True)
        rate = a.get("ratelimit", required=True)
        return await self._task_control(
            name, worker, "rate_limit", {"task_name": name, "rate_limit": rate}, "Failed to set rate limit"
        )

    async def _task_control(
        self, name: str, worker: str, command: str, arguments: dict[str, Any], failed: str
    ) -> Response:
        self._registered(name)
        await in_thread(self._known_worker, worker)
        reply = await in_thread(self.manager.control_worker, worker, command, arguments, CONTROL_TIMEOUT)
        if reply is not None and "ok" in reply:
            return json_response({"message": str(reply["ok"])})
        why = "no reply from the worker" if reply is None else str(reply.get("error"))
        raise HttpError(403, f"{failed}: '{why}'", "text/html; charset=UTF-8")

    async def healthcheck(self, request: Request) -> Response:
        return text_response("OK", content_type="text/html; charset=UTF-8")


def task_view(manager: Any) -> TaskView:
    """Flower's view of tasks as the live workers report them now."""
    live = manager.list_workers()
    prefetched: set[str] = set()
    for e in live:
        prefetched.update(worker_reports.prefetched_of(worker_reports.details_of(e)))
    return TaskView(prefetched, manager.shown_inputs, worker_reports.holders(live))


def _flower_key(task: dict[str, Any], field: str) -> tuple[Any, ...]:
    """Flower's sort key: None first ascending and last descending, text case-folded, ties
    by id in the same direction."""
    value = task.get(field)
    if isinstance(value, str):
        value = value.casefold()
    missing = value is None
    return (not missing, value if not missing else 0, task["uuid"])


def _control_texts(action: str, name: str, a: Arguments) -> tuple[str, dict[str, Any], str | None, str]:
    """The worker command of a Flower worker control, its arguments, Flower's message on
    success (None: the worker's own text) and the start of its message on failure."""
    if action in ("pool/grow", "pool/shrink"):
        n = a.get("n", 1, int)
        verb = "Growing" if action == "pool/grow" else "Shrinking"
        command = "pool_grow" if action == "pool/grow" else "pool_shrink"
        short = action.rpartition("/")[2]
        return (
            command,
            {"n": n},
            f"{verb} '{name}' worker's pool by {n}",
            f"Failed to {short} '{name}' worker's pool",
        )
    if action == "pool/autoscale":
        high = a.get("max", None, int, required=True)
        low = a.get("min", None, int, required=True)
        return (
            "autoscale",
            {"max": high, "min": low},
            f"Autoscaling '{name}' worker (min={low}, max={high})",
            f"Failed to autoscale '{name}' worker",
        )
    if action == "pool/restart":
        return (
            "pool_restart",
            {},
            f"Restarting '{name}' worker's pool",
            f"Failed to restart the '{name}' pool",
        )
    queue = a.get("queue", required=True)
    if action == "queue/add-consumer":
        return "add_consumer", {"queue": queue}, None, f"Failed to add '{queue}' consumer to '{name}' worker"
    return (
        "cancel_consumer",
        {"queue": queue},
        None,
        f"Failed to cancel '{queue}' consumer from '{name}' worker",
    )


async def _body(request: Request) -> tuple[list[Any], Any, dict[str, Any]]:
    """Flower's request body: empty or a JSON object with ``args`` (a list), ``kwargs`` and
    send options."""
    raw = await request.body()
    if not raw.strip():
        return [], {}, {}
    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise HttpError(400, str(exc)) from None
    if not isinstance(options, dict):
        raise HttpError(400, "invalid options")
    args = options.pop("args", [])
    kwargs = options.pop("kwargs", {})
    if not isinstance(args, list):
        raise HttpError(400, "args must be an array")
    if not isinstance(kwargs, dict):
        raise HttpError(400, "kwargs must be an object")
    return args, kwargs, options


def _converted(options: dict[str, Any]) -> dict[str, Any]:
    """The send options pgtasks acts on, converted as Flower converts them: ``eta`` and
    ``expires`` dates as ``%Y-%m-%d %H:%M:%S.%f`` (async-apply's format) or ISO 8601
    (send-task's, as ``send_task`` takes them), naive meaning UTC; ``countdown`` and a numeric
    ``expires`` as seconds. 400 ``Invalid option`` for a value that does not convert."""
    out: dict[str, Any] = {}
    try:
        for key in SEND_OPTIONS:
            if key not in options or options[key] is None:
                continue
            value = options[key]
            if key == "eta":
                value = _send_date(value)
            elif key == "countdown":
                value = float(value)
            elif key == "expires":
                is_date = isinstance(value, str) and not _is_number(value)
                value = _send_date(value) if is_date else float(value)
            elif key == "priority":
                value = int(value)
            out[key] = value
    except (TypeError, ValueError):
        raise HttpError(400, "Invalid option") from None
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _send_date(value: Any) -> dt.datetime:
    """An ``eta``/``expires`` text as a datetime: Flower's format, else ISO 8601 (``Z`` or an
    offset, or naive: UTC); ValueError for anything else."""
    if not isinstance(value, str):
        raise ValueError(value)
    text = value.strip()
    try:
        when = dt.datetime.strptime(text, FLOWER_DATE_FORMAT)
    except ValueError:
        when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def _local_minute(text: str | None) -> dt.datetime | None:
    """``YYYY-MM-DD HH:MM`` in this host's local time, as Flower reads received_start/end."""
    if text is None:
        return None
    local = time.mktime(time.strptime(text, RECEIVED_FORMAT))
    return dt.datetime.fromtimestamp(local, dt.timezone.utc)


def _wait(manager: Any, task_id: str, timeout: float | None) -> None:
    """Wait up to ``timeout`` seconds (None: for ever) for a task to end; its outcome is read after."""
    with contextlib.suppress(Exception):  # its end (a failure too) or the timeout: read the record
        manager.AsyncResult(task_id).get(timeout=timeout)


def _outcome(task: TaskInfo, state: str) -> dict[str, Any]:
    """``result`` (and ``traceback`` for a failure) as Celery's result backend gives them."""
    if state == "SUCCESS":
        value = result_value(task)
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        return {"result": value}
    if state == "REVOKED":
        return {"result": revoked_repr(task)}
    if not_registered(task):
        return {
            "result": f"Task of kind '{task.name}' never registered, please make sure it's imported.",
            "traceback": None,
        }
    exception, traceback = exception_repr(task.error)
    return {"result": exception, "traceback": traceback}
