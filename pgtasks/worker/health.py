"""Liveness and readiness of a worker for probes (Kubernetes, systemd, a load balancer).

Alive: the worker's last heartbeat in the database is younger than its lease. Ready: alive,
and its claim loop runs and reaches the database (not in an outage, not shutting down).

- ``--health-file PATH``: the file's modification time is renewed while the worker is alive
  (``pgtasks health --file PATH --max-age N`` checks it), and removed when the worker stops.
- ``--health-port N``: HTTP on the standard library's server: ``GET /livez`` and
  ``GET /readyz`` answer 200 ``ok`` or 503 with the reason.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pgtasks.engine.errors import ConfigurationError
from pgtasks.support.loops import ErrorPolicy, Loop
from pgtasks.worker.endpoint import Endpoint, Route

log = logging.getLogger("pgtasks.worker")


@dataclass(frozen=True, slots=True)
class Probe:
    """What a probe reads from the worker: ``alive()`` and ``ready()`` each return None when
    true, or the reason they are not."""

    alive: Callable[[], str | None]
    ready: Callable[[], str | None]


class HealthFile:
    """Renews ``path``'s modification time every ``interval`` seconds while the worker is
    alive; removes it on :meth:`stop`."""

    def __init__(self, path: Path, probe: Probe, interval: float) -> None:
        self.path = path
        self._probe = probe
        # A full or read-only disk: warned about once (the probe will say so), until it heals.
        errors = ErrorPolicy(
            log,
            f"cannot renew the health file {path}",
            (OSError,),
            recovered=f"the health file {path} is renewed again",
        )
        self._loop = Loop("pgtasks-health-file", self._renew, interval, errors)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop(timeout=5)
        self.path.unlink(missing_ok=True)

    def _renew(self) -> None:
        if self._probe.alive() is None:
            self.path.touch()
            os.utime(self.path)


def _check(check: Callable[[], str | None]) -> Route:
    def answer() -> tuple[int, str, bytes]:
        reason = check()
        code, body = (200, "ok") if reason is None else (503, reason)
        return code, "text/plain; charset=utf-8", f"{body}\n".encode()

    return answer


class HealthServer(Endpoint):
    """``/livez`` and ``/readyz`` over HTTP on a daemon thread."""

    def __init__(self, address: str, port: int, probe: Probe) -> None:
        routes = {"/livez": _check(probe.alive), "/readyz": _check(probe.ready)}
        super().__init__(address, port, routes, "pgtasks-health")


def fresh(since: float | None, limit: float, what: str) -> str | None:
    """None when ``since`` (a ``time.monotonic()``) is within ``limit`` seconds, else why not."""
    if since is None:
        return f"no {what} yet"
    old = time.monotonic() - since
    return None if old <= limit else f"last {what} {old:.1f}s ago (limit {limit:g}s)"


@dataclass(frozen=True, slots=True)
class HealthOptions:
    """The worker's probes: a file to renew, an HTTP port (0 picks a free one), both or none."""

    file: Path | None = None
    port: int | None = None
    address: str = "0.0.0.0"  # probes come from the kubelet, off the pod's host

    def __post_init__(self) -> None:
        """Refuse at start-up what would fail later: a port out of range (bind() refuses
        it only once the worker runs) or a file whose folder is missing or not writable (the
        file would never be renewed, and the probe would fail forever)."""
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ConfigurationError(f"--health-port must be between 0 and 65535, not {self.port}")
        if self.file is not None:
            if self.file.is_dir():  # '' is '.' too
                raise ConfigurationError(f"--health-file {self.file}: a folder, not a file to renew")
            folder = self.file.parent
            if not folder.is_dir():
                raise ConfigurationError(f"--health-file {self.file}: the folder {folder} does not exist")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ConfigurationError(f"--health-file {self.file}: the folder {folder} is not writable")

    def start(self, probe: Probe, interval: float) -> list[HealthFile | HealthServer]:
        """Start what is asked for; stop each returned part when the worker stops."""
        parts: list[HealthFile | HealthServer] = []
        if self.file is not None:
            parts.append(HealthFile(self.file, probe, interval))
        if self.port is not None:
            server = HealthServer(self.address, self.port, probe)
            log.info("health probes on http://%s:%d/livez and /readyz", self.address, server.port)
            parts.append(server)
        for part in parts:
            part.start()
        return parts
