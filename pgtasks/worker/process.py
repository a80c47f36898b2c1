"""The worker process: logging, banner, signals, and the run loop of one Worker.

SIGTERM or SIGINT: warm shutdown (stop claiming, let running tasks finish within the grace
period, write their outcomes). A second SIGTERM/SIGINT, or SIGQUIT: cold shutdown (exit at
once; the tasks still running are recovered from the database, so nothing is lost).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from importlib.metadata import version as package_version
from types import FrameType

from pgtasks.engine.core import Engine
from pgtasks.sysdb.urls import redact_url
from pgtasks.worker.worker import Worker, WorkerOptions

log = logging.getLogger("pgtasks.worker")

LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"


def banner(worker: Worker, app_name: str) -> str:
    settings = worker.engine.settings
    lines = [
        f" -------------- {worker.executor_id} v{package_version('pgtasks')}",
        f"--- app:         {app_name}",
        f"--- database:    {redact_url(settings.database_url)} (schema {settings.schema})",
        f"--- queues:      {', '.join(worker.options.queues)}",
        f"--- concurrency: {worker.options.concurrency} (threads)",
        f"--- executor:    {worker.executor_id} pid {os.getpid()}",
        f"--- version:     {worker.version}",
        f"--- tasks:       {', '.join(worker.engine.registry.names()) or '(none)'}",
    ]
    return "\n".join(lines)


def run_worker(engine: Engine, options: WorkerOptions, app_name: str, loglevel: str = "INFO") -> int:
    """Run a worker in this process until a signal stops it; return the exit code."""
    logging.basicConfig(level=loglevel.upper(), format=LOG_FORMAT, stream=sys.stderr)
    worker = Worker(engine, options)
    signals_seen = 0

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signum == signal.SIGQUIT or signals_seen > 1:
            log.warning("cold shutdown: exiting now; running tasks will be recovered")
            logging.shutdown()
            os._exit(1)
        log.warning("warm shutdown: no new tasks; waiting for %d running tasks", worker.running())
        worker.stop()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, on_signal)
    worker.start()
    print(banner(worker, app_name), file=sys.stderr, flush=True)
    log.info("%s ready.", worker.executor_id)
    worker.run()
    finished = worker.shutdown()
    if not finished:
        log.warning("grace period over with tasks still running; they will be recovered")
    log.info("worker stopped")
    logging.shutdown()
    if not finished:
        os._exit(0)  # threads still running tasks must not keep the process alive
    return 0
