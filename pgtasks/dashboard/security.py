"""The dashboard's guards, as Flower 2.2 applies them and then some: HTTP basic authentication
(``--basic-auth user:password``), the API switch (``FLOWER_UNAUTHENTICATED_API``), the rule
that a dashboard reachable from other hosts must have credentials, the ``Host`` check that
stops DNS rebinding, the refusal of cross-site state changes (``Sec-Fetch-Site``,
``Origin``), the CSRF token every form carries, and the read-only mode."""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import Headers

from pgtasks.engine.errors import ConfigurationError

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::"})
# Flower's texts, which scripts written against it may look for.
API_CLOSED = (
    "FLOWER_UNAUTHENTICATED_API environment variable is required to enable API without authentication"
)
READ_ONLY = "Read only mode is enabled"
CROSS_SITE = "Cross-site request forbidden"
CROSS_ORIGIN = "Cross-origin request forbidden"


def parse_basic_auth(text: str | list[str] | tuple[str, ...] | None) -> tuple[tuple[str, str], ...]:
    """``user:password[,user2:password2]`` as Flower spells it (or a list of pairs, as in
    ``flowerconfig.py``); ConfigurationError if malformed."""
    if not text:
        return ()
    items = text.split(",") if isinstance(text, str) else [i for t in text for i in str(t).split(",")]
    pairs = []
    for item in items:
        user, sep, password = item.strip().partition(":")
        if not sep or not user or not password:
            raise ConfigurationError("--basic-auth takes user:password (several separated by commas)")
        pairs.append((user, password))
    return tuple(pairs)


def parse_hosts(text: str | list[str] | tuple[str, ...] | None) -> frozenset[str]:
    """Host names a dashboard behind a proxy is reached by (``--allowed-hosts``): comma
    separated, without ports; ``*`` allows any."""
    if not text:
        return frozenset()
    items = text.split(",") if isinstance(text, str) else [i for t in text for i in str(t).split(",")]
    hosts = {item.strip().lower().strip("[]") for item in items if item.strip()}
    for host in hosts:
        if host != "*" and ((":" in host and not _is_ip(host)) or "/" in host or " " in host):
            raise ConfigurationError(f"--allowed-hosts takes host names without a port or path, not {host!r}")
    return frozenset(hosts)


def check_exposure(address: str, credentials: tuple[tuple[str, str], ...]) -> None:
    """Refuse to serve other hosts without authentication."""
    if address not in LOCAL_HOSTS and not credentials:
        shown = address or "every interface"
        raise ConfigurationError(
            f"the dashboard would listen on {shown!r} without authentication: give --basic-auth "
            "user:password, or bind it to 127.0.0.1"
        )


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def host_name(header: str) -> str:
    """The host of a ``Host`` header, lower case, without its port (IPv6 without brackets)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    if header.count(":") > 1:  # a bare IPv6 address (not valid in Host, but be exact)
        return header
    return header.partition(":")[0]


@dataclass(frozen=True)
class Guard:
    """The dashboard's security settings: ``credentials`` (empty: none needed), the read-only
    mode, whether the API answers without credentials (Flower's
    ``FLOWER_UNAUTHENTICATED_API``), the address it listens on and the ``allowed_hosts`` it
    also answers for, and this process's CSRF token (random per start, in every form)."""

    credentials: tuple[tuple[str, str], ...] = ()
    read_only: bool = False
    unauthenticated_api: bool = False
    address: str = "127.0.0.1"
    allowed_hosts: frozenset[str] = frozenset()
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def api_enabled(self) -> bool:
        """Flower 2.2 serves its API only with authentication or FLOWER_UNAUTHENTICATED_API."""
        return bool(self.credentials) or self.unauthenticated_api

    @property
    def cors(self) -> bool:
        """Flower sends ``Access-Control-Allow-Origin: *`` on an open API without credentials."""
        return not self.credentials and self.unauthenticated_api

    def authenticated(self, header: str | None) -> bool:
        if not self.credentials:
            return True
        if not header or not header.lower().startswith("basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        found = False
        for u, p in self.credentials:  # every pair compared: the time says nothing of which matched
            found |= hmac.compare_digest(user.encode(), u.encode()) & hmac.compare_digest(
                password.encode(), p.encode()
            )
        return found

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` names this dashboard. Without credentials, only the
        loopback names, the address it listens on and ``allowed_hosts`` do: a web page on
        another domain that resolves to 127.0.0.1 (DNS rebinding) sends its own domain and is
        refused. With credentials every host passes unless ``allowed_hosts`` is given."""
        if "*" in self.allowed_hosts:
            return True
        if self.credentials and not self.allowed_hosts:
            return True
        if not header:
            return False
        host = host_name(header)
        served = set(self.allowed_hosts)
        if not self.credentials:
            served |= LOCAL_HOSTS
        if self.address not in WILDCARD_ADDRESSES:
            served.add(self.address.lower())
        return host in served

    def cross_site(self, headers: Headers) -> str | None:
        """Why a state-changing request is refused as cross-site, or None. As Flower does
        with authentication, and here without it too: ``Sec-Fetch-Site`` other than
        ``same-origin``, else an ``Origin`` whose host and port are not the request's
        ``Host``. Scripts send neither and pass."""
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None:
            return None if fetch_site.strip().lower() == "same-origin" else CROSS_SITE
        origin = headers.get("origin")
        if origin is None:
            return None
        netloc = urlsplit(origin.strip()).netloc.lower()
        return None if netloc and netloc == headers.get("host", "").strip().lower() else CROSS_ORIGIN

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf_token)
