"""Flower's HTTP conventions, which scripts and proxies written against Flower rely on: the
gate every request passes (``--url_prefix``, the ``Host`` check, cross-site refusals, the
API switch, basic authentication, read-only), the headers of every answer (``nosniff``, CORS
on an open API, an ``Etag`` on every GET answered 200 and 304 for a matching
``If-None-Match``), its argument parsing and error texts (plain text, exactly Flower's), 204
to ``OPTIONS`` and 405 to a method a handler lacks."""

from __future__ import annotations

import hashlib
import html
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pgtasks.dashboard.security import API_CLOSED, READ_ONLY, Guard
from pgtasks.engine.errors import ConfigurationError

log = logging.getLogger("pgtasks.dashboard")

TEXT = "text/plain; charset=UTF-8"
HTML = "text/html; charset=UTF-8"
JSON = "application/json; charset=UTF-8"
CORS_HEADERS = (
    (b"access-control-allow-origin", b"*"),
    (
        b"access-control-allow-headers",
        b"x-requested-with,access-control-allow-origin,authorization,content-type",
    ),
    (b"access-control-allow-methods", b"PUT, DELETE, OPTIONS, POST, GET, PATCH"),  # Flower: a leading space
)
NOSNIFF = (b"x-content-type-options", b"nosniff")
BARE_404 = b"<html><title>404: Not Found</title><body>404: Not Found</body></html>"
TRUE_WORDS = frozenset({"y", "yes", "t", "true", "on", "1"})
FALSE_WORDS = frozenset({"n", "no", "f", "false", "off", "0"})
T = TypeVar("T")


class HttpError(Exception):
    """An answer other than 200: ``status`` with ``text`` (plain text unless ``content_type``)."""

    def __init__(self, status: int, text: str = "", content_type: str = TEXT) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.content_type = content_type

    def response(self) -> Response:
        return Response(self.text, self.status, headers={"content-type": self.content_type})


def json_response(body: Any, status: int = 200) -> Response:
    """JSON as Flower writes it: the default separators, ``</`` escaped."""
    text = json.dumps(body).replace("</", "<\\/")
    return Response(text, status, headers={"content-type": JSON})


def text_response(text: str, status: int = 200, content_type: str = TEXT) -> Response:
    return Response(text, status, headers={"content-type": content_type})


def strtobool(text: str) -> bool:
    """Flower's (distutils') boolean words, any case; ValueError for another."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"invalid truth value {text!r}")


class Arguments:
    """A request's query arguments, read as Flower reads them: the last value of a repeated
    name, stripped and HTML-escaped (``escape=False`` for free text such as ``search``);
    400 ``Missing argument NAME`` for a required one absent or empty, 400 ``Invalid argument
    'VALUE' of type 'int'`` for one that does not parse."""

    def __init__(self, request: Request) -> None:
        self._params = request.query_params

    def get(self, name: str, default: T | None = None, kind: Callable[[str], T] | None = None,
            required: bool = False, escape: bool = True) -> Any:  # fmt: skip
        values = self._params.getlist(name)
        value = values[-1].strip() if values else None
        if value is not None and escape:
            value = html.escape(value)
        if required and not value:
            raise HttpError(400, f"Missing argument {name}")
        if value is None:
            return default
        if kind is None:
            return value
        try:
            return kind(value)
        except (TypeError, ValueError):
            type_name = "bool" if kind is strtobool else getattr(kind, "__name__", str(kind))
            raise HttpError(400, f"Invalid argument '{value}' of type '{type_name}'") from None


class Handler:
    """One route, as a Flower handler: ``get``/``post`` coroutines of a subclass, 204 to
    OPTIONS, 405 to another method. ``api``: behind the API switch, 401 without a body when
    unauthenticated; ``public``: no credentials needed (``/metrics``, ``/healthcheck``);
    ``changes_state``: refused in read-only mode. A handler's HttpError becomes its
    answer; any other exception a 500 without a body, logged."""

    api = True
    public = False
    changes_state = False
    method_not_allowed = (b"", HTML)

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.dispatch(Request(scope, receive))
        await response(scope, receive, send)

    async def dispatch(self, request: Request) -> Response:
        guard = self.guard
        if self.api and not guard.api_enabled:
            return text_response(API_CLOSED, 401)
        method = request.method.upper()
        if method == "OPTIONS":
            return Response(status_code=204)
        handle: Callable[[Request], Awaitable[Response]] | None = (
            getattr(self, method.lower(), None) if method in ("GET", "POST") else None
        )
        if handle is None:
            body, content_type = self.method_not_allowed
            return Response(body, 405, headers={"content-type": content_type})
        if not self.public and not guard.authenticated(request.headers.get("authorization")):
            return Response(b"", 401, headers={"content-type": HTML}) if self.api else page_denied()
        if self.changes_state and guard.read_only:
            return text_response(READ_ONLY, 403)
        try:
            return await handle(request)
        except HttpError as exc:
            return exc.response()
        except ConfigurationError as exc:  # a value no task can have: a task id with a NUL, ...
            # logged too: the same error may come from the server's own settings (task_routes)
            log.warning("%s %r refused: %s", method, request.url.path, exc)
            return text_response(str(exc), 400)
        except Exception:
            log.exception("%s %r failed", method, request.url.path)  # repr: no line breaks of the caller's
            return Response(b"", 500, headers={"content-type": HTML})


def page_denied() -> Response:
    """Flower's answer to a page asked for without valid credentials."""
    return Response(
        "Access denied", 401, headers={"content-type": HTML, "www-authenticate": 'Basic realm="flower"'}
    )


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking call (a database read) off the event loop."""
    return await run_in_threadpool(fn, *args, **kwargs)


PUBLIC_PATHS = ("/metrics", "/healthcheck")


class FlowerGate:
    """ASGI middleware around the whole dashboard (see the module): strips ``url_prefix``
    (other paths get Tornado's bare 404), refuses a ``Host`` the dashboard does not serve
    and cross-site state changes, asks for credentials on the pages (the API handlers ask
    on their own, after the API switch), and adds Flower's headers and ETags."""

    def __init__(self, app: ASGIApp, guard: Guard, url_prefix: str = "") -> None:
        self.app = app
        self.guard = guard
        self.prefix = "/" + url_prefix.strip("/") if url_prefix.strip("/") else ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if self.prefix:
            if path != self.prefix and not path.startswith(self.prefix + "/"):
                await Response(BARE_404, 404, headers={"content-type": HTML})(scope, receive, send)
                return
            scope = {**scope, "path": path[len(self.prefix) :] or "/", "root_path": self.prefix}
            path = scope["path"]
        headers = Headers(scope=scope)
        early = self._refusal(scope["method"].upper(), path, headers)
        send = self._decorating(scope, headers, send)
        if early is not None:
            await early(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, method: str, path: str, headers: Headers) -> Response | None:
        guard = self.guard
        if not guard.host_allowed(headers.get("host")):
            return text_response(
                f"the dashboard does not serve the host {headers.get('host', '')!r}: reach it by "
                "127.0.0.1 or localhost, or name the host with --allowed-hosts (behind a proxy)",
                403,
            )
        if method not in ("GET", "HEAD", "OPTIONS") and (why := guard.cross_site(headers)) is not None:
            return text_response(why, 403)
        is_page = not path.startswith(("/api/", "/static/")) and path not in PUBLIC_PATHS
        if is_page and method != "OPTIONS" and not guard.authenticated(headers.get("authorization")):
            return page_denied()
        return None

    def _decorating(self, scope: Scope, request_headers: Headers, send: Send) -> Send:
        """``send`` adding Flower's headers; a GET answered 200 is held, to tag it (and
        answer 304 when the client has that tag already)."""
        cors = self.guard.cors
        tag_it = scope["method"].upper() == "GET"
        held: list[Message] = []

        async def decorated(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.append("x-content-type-options", "nosniff")
                if cors:
                    for name, value in CORS_HEADERS:
                        headers.append(name.decode(), value.decode())
                if tag_it and message["status"] == 200 and "etag" not in headers:
                    held.append(message)
                    return
                await send(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if message.get("more_body"):
                return
            await _send_tagged(held, request_headers, send)

        return decorated


async def _send_tagged(held: list[Message], request_headers: Headers, send: Send) -> None:
    start, *chunks = held
    body = b"".join(m.get("body", b"") for m in chunks)
    tag = '"' + hashlib.sha1(body).hexdigest() + '"'
    headers = MutableHeaders(scope=start)
    headers["etag"] = tag
    if _matches(request_headers.get("if-none-match"), tag):
        kept = [(k, v) for k, v in start["headers"] if k not in (b"content-type", b"content-length")]
        await send({"type": "http.response.start", "status": 304, "headers": kept})
        await send({"type": "http.response.body", "body": b""})
        return
    headers["content-length"] = str(len(body))
    await send(start)
    await send({"type": "http.response.body", "body": body})


def _matches(if_none_match: str | None, tag: str) -> bool:
    """Tornado's ETag check: ``*``, or any listed tag equal to ours (weak ``W/`` ignored)."""
    if not if_none_match:
        return False
    wanted = [t.strip() for t in if_none_match.split(",")]
    return "*" in wanted or any(t.removeprefix("W/") == tag for t in wanted)


def not_found_page() -> Response:
    """Flower's 404 for a path it has no handler for: an HTML page."""
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>404 Not Found</title></head>'
        '<body><h1>404</h1><p>Not Found: this page does not exist.</p><p><a href="/">Dashboard</a></p>'
        "</body></html>\n"
    )
    return Response(page, 404, headers={"content-type": HTML})
