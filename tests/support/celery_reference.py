"""The real Celery on Redis as a reference: a redis-server and a real Celery worker (the
separate venv, ``make celery-env``) for one task module, and scenarios run against them by that
venv's Python. Used to pin what Celery does where its documentation leaves room
(tests/compat/test_celery_reference.py)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import REPO
from tests.support.redis import RedisServer, celery_python


@dataclass
class CeleryReference:
    """A running real Celery worker of ``app`` on its own Redis, and the ledger its tasks write."""

    app: str
    redis: RedisServer
    ledger: Path
    log: Path

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("PGTASKS_", "CELERY"))}
        return {
            **keep,
            "CELERY_REFERENCE_REDIS": self.redis.url,
            "PGTASKS_TEST_LEDGER": str(self.ledger),
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
        }

    def run(self, module: str, *args: str, timeout: float = 600) -> Any:
        """``python -m module args`` with the real Celery; the JSON of its last output line."""
        done = subprocess.run(
            [str(celery_python()), "-m", module, *args],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{module} failed:\n{done.stderr[-4000:]}\nworker log:\n{self.worker_log()}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def worker_log(self) -> str:
        return self.log.read_text()[-4000:] if self.log.exists() else ""


@contextmanager
def celery_reference(app: str, concurrency: int = 2) -> Iterator[CeleryReference]:
    """A redis-server and ``celery -A app worker`` (prefork) until the end of the block."""
    redis = RedisServer().start()
    folder = Path(tempfile.mkdtemp(prefix="celery-reference-"))
    reference = CeleryReference(app, redis, folder / "ledger", folder / "worker.log")
    reference.ledger.touch()
    argv = [str(celery_python()), "-m", "celery", "-A", app, "worker", "-P", "prefork"]
    argv += ["-c", str(concurrency), "-l", "INFO", "-n", f"reference-{os.getpid()}@%h"]
    with reference.log.open("a") as sink:
        worker = subprocess.Popen(argv, cwd=REPO, env=reference.env(), stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while " ready." not in reference.log.read_text():
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Celery worker did not start:\n{reference.worker_log()}")
            time.sleep(0.1)
        yield reference
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        redis.stop()
