"""The dashboard as an ASGI application (Starlette) and the ``pgtasks dashboard`` server
(uvicorn): pages, Flower's REST API, ``/healthcheck`` and ``/metrics`` behind Flower's gate
(``http.FlowerGate``)."""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pgtasks.dashboard.console import Console
from pgtasks.dashboard.flower import Endpoint, FlowerApi, FlowerSettings
from pgtasks.dashboard.http import FlowerGate, not_found_page
from pgtasks.dashboard.metrics import RUNTIME_BUCKETS, MetricsEndpoint
from pgtasks.dashboard.pages import Pages
from pgtasks.dashboard.security import Guard, check_exposure
from pgtasks.management import TaskManagement

log = logging.getLogger("pgtasks.dashboard")


async def _http_error(request: Request, exc: Exception) -> Response:
    """Flower's HTML page for an unknown path; Starlette's plain answer for the others."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return not_found_page()
    return Response(b"", status, headers={"content-type": "text/html; charset=UTF-8"})


def create_app(
    manager: TaskManagement,
    guard: Guard,
    settings: FlowerSettings | None = None,
    url_prefix: str = "",
    runtime_buckets: tuple[float, ...] = RUNTIME_BUCKETS,
) -> Starlette:
    """The dashboard over ``manager`` (an App or a Client)."""
    console = Console(manager)
    metrics = MetricsEndpoint(console, runtime_buckets)
    plain_none = (b"None", "text/plain; charset=UTF-8")
    routes: list[Route | Mount] = [
        *Pages(console, guard).routes(),
        *FlowerApi(console, guard, settings).routes(),
        Route(
            "/metrics",
            Endpoint(guard, get=metrics.endpoint, api=False, public=True, method_not_allowed=plain_none),
        ),
        Mount("/static", StaticFiles(packages=[("pgtasks.dashboard", "static")]), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(FlowerGate, guard=guard, url_prefix=url_prefix)],
        exception_handlers={HTTPException: _http_error},
    )


def serve(
    manager: TaskManagement,
    host: str,
    port: int,
    guard: Guard,
    settings: FlowerSettings | None = None,
    url_prefix: str = "",
    runtime_buckets: tuple[float, ...] = RUNTIME_BUCKETS,
) -> None:
    """Run the dashboard until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    import uvicorn

    check_exposure(host, guard.credentials)
    app = create_app(manager, guard, settings, url_prefix, runtime_buckets)
    mode = " (read-only)" if guard.read_only else ""
    auth = "basic auth" if guard.credentials else "no authentication (local only)"
    api = "open" if guard.api_enabled else "closed (FLOWER_UNAUTHENTICATED_API unset)"
    prefix = "/" + url_prefix.strip("/") + "/" if url_prefix.strip("/") else ""
    log.warning(
        "pgtasks dashboard on http://%s:%d%s%s, %s, API %s", host or "0.0.0.0", port, prefix, mode, auth, api
    )
    # No access log: URLs carry task ids and filters, which need not end up in log files.
    uvicorn.run(app, host=host or "0.0.0.0", port=port, access_log=False, log_level="warning")
