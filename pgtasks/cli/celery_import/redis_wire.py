"""Just enough of the Redis protocol (RESP 2) to read and remove the messages a Celery
deployment left in its Redis broker (``pgtasks import-celery``): a blocking socket, no
dependency. URLs: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` for TLS."""

from __future__ import annotations

import socket
import ssl
from typing import Any
from urllib.parse import unquote, urlsplit

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.urls import redact_url


class RedisError(Exception):
    """An error reply from the server, or a connection that failed."""


class RedisConnection:
    """One connection; :meth:`call` sends a command and returns its reply (bytes, int, None
    or a list of those)."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        try:
            parts = urlsplit(url)
            host, port = parts.hostname or "localhost", parts.port or 6379
        except ValueError as exc:  # a broken [IPv6] host, a port that is no number or too big
            raise ConfigurationError(f"--broker {redact_url(url)!r} is not a valid URL: {exc}") from None
        if parts.scheme not in ("redis", "rediss"):
            raise ConfigurationError(
                f"--broker must be a redis:// or rediss:// URL, not {parts.scheme or url!r}"
            )
        try:
            raw = socket.create_connection((host, port), timeout=timeout)
            if parts.scheme == "rediss":
                raw = ssl.create_default_context().wrap_socket(raw, server_hostname=host)
        except OSError as exc:
            raise RedisError(f"cannot connect to Redis at {host}:{port}: {exc}") from exc
        self._sock = raw
        self._buffer = b""
        if parts.password is not None:
            user = unquote(parts.username) if parts.username else None
            password = unquote(parts.password)
            self.call("AUTH", *([user] if user else []), password)
        db = parts.path.strip("/")
        if db:
            if not db.isdigit():
                raise ConfigurationError(f"the Redis database in the URL must be a number, not {db!r}")
            self.call("SELECT", db)

    def call(self, *args: str | bytes | int) -> Any:
        """Send one command; its reply (a server error raises RedisError)."""
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        frame = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        try:
            self._sock.sendall(frame)
            return self._reply()
        except OSError as exc:
            raise RedisError(f"lost the connection to Redis: {exc}") from exc

    def close(self) -> None:
        self._sock.close()

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            self._fill()
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size + 2:
            self._fill()
        data, self._buffer = self._buffer[:size], self._buffer[size + 2 :]
        return data

    def _fill(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise RedisError("Redis closed the connection")
        self._buffer += chunk

    def _reply(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RedisError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self._exactly(size)
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise RedisError(f"unexpected reply from Redis: {line[:40]!r}")
