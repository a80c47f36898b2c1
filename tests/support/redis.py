"""A throwaway redis-server (Debian's package) for the broker-import tests, and the Python of the
separate venv that holds the real Celery (``make celery-env``)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pgtasks.cli.celery_import.redis_wire import RedisConnection, RedisError
from tests.support.cli import REPO
from tests.support.pgserver import free_port

CELERY_PYTHON = REPO / ".venv-celery" / "bin" / "python"


@dataclass
class RedisServer:
    port: int = field(default_factory=free_port)
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pgtasks-redis-")))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 30.0) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: `make test` installs it (apt-get install redis-server)"
            )
        argv = [
            binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(self.base),
        ]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                connection = RedisConnection(self.url, timeout=1)
            except RedisError:
                time.sleep(0.05)
                continue
            connection.close()
            return self
        raise RuntimeError("redis-server did not start")

    def connect(self) -> RedisConnection:
        return RedisConnection(self.url)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
        shutil.rmtree(self.base, ignore_errors=True)


def celery_python() -> Path:
    """The real Celery's interpreter; a clear error (never a skip) when it is missing."""
    if not CELERY_PYTHON.exists():
        raise RuntimeError(f"{CELERY_PYTHON} is missing: `make test` makes it (make celery-env)")
    return CELERY_PYTHON
