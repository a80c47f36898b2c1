"""The worker process: logging, banner, signals, and the run loop of one Worker.

SIGTERM or SIGINT, or the remote control command ``shutdown`` (``celery control shutdown``):
warm shutdown (stop claiming, let running tasks finish within the grace period, write their
outcomes; exit status 0). A second SIGTERM/SIGINT, or SIGQUIT: cold shutdown (exit at
once; the tasks still running are recovered from the database, so nothing is lost).
SIGHUP, when standard output is not a terminal (as Celery's worker): restart, a warm
shutdown and then the same command line again in the same process. SIGUSR1: the stack of
every thread is written to standard error, and the worker goes on (Celery's worker does the
same; by default the signal would end the process).
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import math
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from importlib.metadata import version as package_version
from typing import NoReturn

from pgtasks.engine.core import Engine
from pgtasks.sysdb.urls import redact_url
from pgtasks.worker.health import HealthOptions, Probe
from pgtasks.worker.logs import LOG_FORMAT, configure_logging, logs_json
from pgtasks.worker.metrics import MetricsOptions, WorkerMetrics
from pgtasks.worker.worker import DEFAULT_SHUTDOWN_GRACE, Worker, WorkerOptions

log = logging.getLogger("pgtasks.worker")
__all__ = ["LOG_FORMAT", "banner", "run_worker"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
# What a stop signal means, as Celery's worker tells worker_shutting_down: (how, exit code)
# for the first signal; a second SIGTERM/SIGINT is cold.
SHUTDOWNS = {signal.SIGTERM: ("Warm", 0), signal.SIGINT: ("Warm", 1), signal.SIGQUIT: ("Cold", 1)}
StopSignalHook = Callable[[str, str, int], object]


def banner(worker: Worker, app_name: str) -> str:
    settings = worker.engine.settings
    schema = worker.engine.database_target.schema
    lines = [
        f" -------------- {worker.executor_id} v{package_version('pgtasks')}",
        f"--- app:         {app_name}",
        f"--- database:    {redact_url(settings.database_url)} (schema {schema})",
        f"--- queues:      {', '.join(worker.options.queues)}",
        f"--- concurrency: {worker.options.concurrency} ({worker.options.pool})",
        f"--- wake-ups:    {'LISTEN/NOTIFY, ' if worker.listening else ''}"
        f"polling every {settings.poll_interval:g}s",
        f"--- executor:    {worker.executor_id} pid {os.getpid()}",
        f"--- version:     {worker.version}",
        f"--- tasks:       {', '.join(worker.engine.registry.names()) or '(none)'}",
    ]
    return "\n".join(lines)


def run_worker(
    engine: Engine,
    options: WorkerOptions,
    app_name: str,
    loglevel: str = "INFO",
    after_start: Callable[[], object] | None = None,
    before_stop: Callable[[], object] | None = None,
    health: HealthOptions | None = None,
    metrics: MetricsOptions | None = None,
    on_stop_signal: StopSignalHook | None = None,
    after_stop: Callable[[], object] | None = None,
    operator_signals: bool = False,
    before_exit: Callable[[], object] | None = None,
) -> int:
    """Run a worker in this process until a signal stops it; return the exit code.

    ``after_start`` runs once the worker serves (and its prefork children exist);
    ``before_stop`` runs first thing in a warm shutdown, before the worker drains.
    ``health`` starts the probes (a file, an HTTP port) once the worker serves; ``metrics``
    the Prometheus endpoint, counting from the first claim. ``on_stop_signal(name, how,
    exit code)`` runs as a stop signal arrives (``"SIGTERM", "Warm", 0``; cold: before the
    process exits); ``after_stop`` once the worker stopped warm (its tasks finished, or the
    grace period over), before the process exits or a SIGHUP restart runs it again.
    ``operator_signals``: SIGHUP restarts the worker (when standard output is no terminal) and
    SIGUSR1 writes the threads' stacks, as Celery's worker does (a Celery app's worker);
    otherwise SIGHUP ends the process and SIGUSR1 is the app's. ``before_exit`` runs before
    the process exits at once (a cold shutdown, tasks still running after the grace period),
    where the caller's own cleanup (``finally``) would not run.

    Signal handlers do nothing but wake the main thread through ``signal.set_wakeup_fd``: a
    handler that touched a lock could deadlock with the code it interrupted. The main thread
    reads the signal numbers from the pipe and acts in ordinary context.
    """
    configure_logging(loglevel)  # unless the command line (or the app) configured it already
    worker = Worker(engine, options)
    metrics = metrics or MetricsOptions()
    if metrics.port is not None:
        worker.metrics = WorkerMetrics(worker.running, options.concurrency)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    handled: tuple[signal.Signals, ...] = STOP_SIGNALS
    # As Celery: closing a terminal must not restart it in the background; nor a worker
    # started under nohup, which asked for SIGHUP to be ignored.
    if operator_signals and not _on_terminal() and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        handled += (signal.SIGHUP,)
    for stop_signal in handled:
        signal.signal(stop_signal, lambda _signum, _frame: None)
    if operator_signals:
        _dump_stacks_on(signal.SIGUSR1)
    worker.start()
    if logs_json():
        log.info("%s", banner(worker, app_name))
    else:
        print(banner(worker, app_name), file=sys.stderr, flush=True)
    if after_start is not None:  # e.g. the -B scheduler: started after prefork children fork
        after_start()  # after the banner: it may redirect sys.stderr (a Celery app's worker)
    probes = (health or HealthOptions()).start(
        Probe(worker.alive, worker.ready), max(0.05, engine.settings.lease_seconds / 4)
    )
    metrics_server = metrics.start(worker.metrics)
    log.info("%s ready.", worker.executor_id)
    runner = threading.Thread(target=worker.run, name="pgtasks-claim", daemon=True)
    runner.start()
    stopper: threading.Thread | None = None
    exit_code = 0
    finished = threading.Event()

    def warm_shutdown(grace: float | None) -> None:
        if before_stop is not None:  # e.g. the -B scheduler: no fire after the stop signal
            before_stop()
        if worker.shutdown(grace):
            finished.set()

    def start_stopping(grace: float | None = None) -> threading.Thread:
        stopping = threading.Thread(target=warm_shutdown, args=(grace,), name="pgtasks-shutdown", daemon=True)
        stopping.start()
        return stopping

    signalled = False  # a first SIGTERM/SIGINT came: the next one is a cold shutdown
    restart = False  # SIGHUP: run again once stopped
    while True:
        ready, _, _ = select.select([wake_read], [], [], 0.5)
        for signum in os.read(wake_read, 64) if ready else b"":
            if signum == signal.SIGHUP:
                if stopper is None:
                    running = worker.running()
                    log.warning("restart (SIGHUP): no new tasks; waiting for %d running tasks", running)
                    restart = True
                    stopper = start_stopping()
                continue
            how, code = SHUTDOWNS[signal.Signals(signum)]
            if signum == signal.SIGQUIT or signalled:
                _tell(on_stop_signal, signal.Signals(signum).name, "Cold", 1)
                log.warning("cold shutdown: exiting now; running tasks will be recovered")
                worker.abort()
                _before_exit(before_exit)
                logging.shutdown()
                os._exit(1)
            signalled = True
            restart = False  # a stop signal during a restart's drain: stop there
            _tell(on_stop_signal, signal.Signals(signum).name, how, code)
            if stopper is not None:  # already stopping (remote shutdown, a broken part): still warm
                log.warning("warm shutdown under way: waiting for %d running tasks", worker.running())
                continue
            log.warning("warm shutdown: no new tasks; waiting for %d running tasks", worker.running())
            stopper = start_stopping()
        if stopper is None and worker.shutdown_asked:  # the remote control's ``shutdown``
            log.warning("warm shutdown: no new tasks; waiting for %d running tasks", worker.running())
            stopper = start_stopping()
        broken = None if stopper is not None else worker.broken_part(runner)
        if broken is not None:
            # The claim loop or the pool ended on its own: stop cleanly and exit non-zero, so a
            # supervisor restarts the worker instead of leaving a process that runs nothing.
            # A pool that asks for it has the process replaced instead (below).
            log.critical("the %s; shutting down", broken)
            exit_code = 1
            # Bounded even where a stop signal's wait is not (a Celery app's): a worker that
            # runs nothing must exit for its supervisor to restart it.
            grace = options.shutdown_grace
            stopper = start_stopping(grace if math.isfinite(grace) else DEFAULT_SHUTDOWN_GRACE)
        if stopper is not None and not stopper.is_alive():
            break
    for probe in probes:
        probe.stop()
    if metrics_server is not None:
        metrics_server.stop()
    if not finished.is_set():
        log.warning("grace period over with tasks still running; they will be recovered")
    log.info("worker stopped")
    if after_stop is not None:
        try:
            after_stop()
        except Exception:
            log.exception("the hook run as the worker stopped raised")
    if worker.replace_process or restart:
        _replace_process()
    logging.shutdown()
    if not finished.is_set():
        _before_exit(before_exit)
        os._exit(exit_code)  # threads still running tasks must not keep the process alive
    return exit_code


def _dump_stacks_on(signum: signal.Signals) -> None:
    """Write every thread's stack to the process's own standard error at ``signum`` (from the
    C handler, safe at any moment; the pool's processes inherit it). ``sys.__stderr__``: a
    Celery app's worker may have replaced ``sys.stderr`` with a logger, which has no file."""
    stderr = sys.__stderr__
    if stderr is None:
        return
    with contextlib.suppress(AttributeError, OSError, ValueError):
        faulthandler.register(signum, file=stderr, all_threads=True)


def _on_terminal() -> bool:
    """Whether standard output is a terminal (it may be closed: None, or a closed file)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        return bool(sys.stdout.isatty())
    return False


def _before_exit(hook: Callable[[], object] | None) -> None:
    if hook is None:
        return
    try:
        hook()
    except Exception:
        log.exception("the hook run before the process exits raised")


def _tell(hook: StopSignalHook | None, name: str, how: str, code: int) -> None:
    """Run the stop-signal hook; what it raises is logged, and the shutdown goes on."""
    if hook is None:
        return
    try:
        hook(name, how, code)
    except Exception:
        log.exception("the hook of the %s shutdown (%s) raised", how.lower(), name)


def _replace_process() -> NoReturn:
    """Run this worker again in this process (same pid, same command line): a thread that
    cannot be stopped (a blocked event loop) goes with the old image. Its tasks were written
    or given back; whatever it still held is recovered by the new one (same executor id)."""
    argv = [sys.executable, *sys.orig_argv[1:]]
    log.warning("replacing the worker process (pid %d): %s", os.getpid(), " ".join(argv[1:]))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):  # either may be None (its descriptor closed)
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    os.execv(sys.executable, argv)
