"""The dashboard as an ASGI application (Starlette) and the ``pgtasks dashboard`` server
(uvicorn): pages, Flower's REST API and ``/metrics`` behind one guard."""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pgtasks.dashboard.console import Console
from pgtasks.dashboard.flower import FlowerApi
from pgtasks.dashboard.metrics import MetricsEndpoint
from pgtasks.dashboard.pages import Pages
from pgtasks.dashboard.security import AuthMiddleware, Guard, check_exposure
from pgtasks.management import TaskManagement

log = logging.getLogger("pgtasks.dashboard")


def create_app(manager: TaskManagement, guard: Guard) -> Starlette:
    """The dashboard over ``manager`` (an App or a Client)."""
    console = Console(manager)
    routes: list[Route | Mount] = [
        *Pages(console, guard).routes(),
        *FlowerApi(console, guard).routes(),
        Route("/metrics", MetricsEndpoint(console).endpoint),
        Mount("/static", StaticFiles(packages=[("pgtasks.dashboard", "static")]), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(AuthMiddleware, guard=guard)])


def serve(manager: TaskManagement, host: str, port: int, guard: Guard) -> None:
    """Run the dashboard until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    import uvicorn

    check_exposure(host, guard.credentials)
    app = create_app(manager, guard)
    mode = " (read-only)" if guard.read_only else ""
    auth = "basic auth" if guard.credentials else "no authentication (local only)"
    log.warning("pgtasks dashboard on http://%s:%d%s, %s", host, port, mode, auth)
    # No access log: URLs carry task ids and filters, which need not end up in log files.
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")
