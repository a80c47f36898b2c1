"""The dashboard's guards: HTTP basic authentication (Flower's ``--basic-auth user:password``),
the rule that a dashboard reachable from other hosts must have it, the CSRF token every
action carries, and the read-only mode."""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pgtasks.engine.errors import ConfigurationError

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def parse_basic_auth(text: str | None) -> tuple[tuple[str, str], ...]:
    """``user:password[,user2:password2]`` as Flower spells it; ConfigurationError if malformed."""
    if not text:
        return ()
    pairs = []
    for item in text.split(","):
        user, sep, password = item.partition(":")
        if not sep or not user or not password:
            raise ConfigurationError("--basic-auth takes user:password (several separated by commas)")
        pairs.append((user, password))
    return tuple(pairs)


def check_exposure(host: str, credentials: tuple[tuple[str, str], ...]) -> None:
    """Refuse to serve other hosts without authentication."""
    if host not in LOCAL_HOSTS and not credentials:
        raise ConfigurationError(
            f"the dashboard would listen on {host!r} without authentication: give --basic-auth "
            "user:password, or bind it to 127.0.0.1"
        )


@dataclass(frozen=True)
class Guard:
    """The dashboard's security settings: credentials (empty: none needed), read-only mode,
    and this process's CSRF token (random per start, embedded in every page's forms)."""

    credentials: tuple[tuple[str, str], ...] = ()
    read_only: bool = False
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def authenticated(self, header: str | None) -> bool:
        if not self.credentials:
            return True
        if not header or not header.lower().startswith("basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return any(
            hmac.compare_digest(user, u) & hmac.compare_digest(password, p) for u, p in self.credentials
        )

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf_token)


class AuthMiddleware:
    """Answers 401 with a basic-auth challenge to any request without valid credentials."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            if not self.guard.authenticated(request.headers.get("authorization")):
                response = PlainTextResponse(
                    "authentication required", 401, headers={"WWW-Authenticate": 'Basic realm="pgtasks"'}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def same_origin(request: Request) -> bool:
    """False when a browser says the request comes from another site (the Origin header);
    scripts send no Origin and pass."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] == host


Handler = Callable[[Request], Awaitable[Response]]


def refuse(status: int, message: str) -> Response:
    return PlainTextResponse(message, status)
