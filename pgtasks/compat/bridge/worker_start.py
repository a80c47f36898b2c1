"""A worker (or beat) of a Celery app starting the Celery way: Django set-up, ``include`` and
autodiscovered modules, default queues and limits from the settings, the logging and worker
signals (:func:`worker_hooks`, :func:`beat_started`). The ``pgtasks`` command parses its
arguments and calls these.
"""

from __future__ import annotations

import argparse
import logging
import os
import types
from collections.abc import Callable, Collection
from typing import Any

from pgtasks.compat.bridge import django_support
from pgtasks.compat.bridge.configuration import broker_setting
from pgtasks.compat.bridge.django_results import mirror_of
from pgtasks.compat.bridge.execution import killed_at_time_limit
from pgtasks.compat.bridge.flag_settings import flag
from pgtasks.compat.bridge.json_safe import json_safe
from pgtasks.compat.bridge.memory_broker import is_memory_broker
from pgtasks.compat.bridge.requests import request_from_record
from pgtasks.compat.bridge.worker_logging import redirect_stdouts, setup_worker_logging
from pgtasks.compat.bridge.worker_request import Request, worker_request
from pgtasks.compat.bridge.worker_settings import prefetch_setting, read_worker_settings
from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.exceptions import NotRegistered
from pgtasks.compat.celery.utils.log import mlevel
from pgtasks.compat.celery.utils.nodenames import default_nodename
from pgtasks.compat.celery.worker.control import commands_of
from pgtasks.sysdb.records import TaskRecord
from pgtasks.worker.control import CustomCommands
from pgtasks.worker.pools import INLINE_POOLS
from pgtasks.worker.worker import default_executor_id

log = logging.getLogger("pgtasks.compat")


def report_conf(app: Celery) -> dict[str, Any]:
    """The app's settings as its worker shows them (``inspect conf``): those set, not the
    defaults, secrets masked, every value JSON (a value JSON cannot carry as its repr)."""
    table = app.conf.table(with_defaults=False)  # secrets masked
    return {k: json_safe(v) for k, v in table.items() if isinstance(k, str) and not k.startswith("__")}


def received_signal(app: Celery, sender: Any, hostname: str) -> Callable[[TaskRecord], None]:
    """What sends ``task_received`` for each task the worker claimed, before it runs (Celery:
    when the message arrives), with its request (``request.id``, ``name``, ``args``,
    ``stamps``, ``replaced_task_nesting``, ...); nothing is built while no receiver is
    connected. A task this worker has no such name for sends ``task_unknown`` instead
    (``message`` None, ``exc`` NotRegistered, a KeyError, ``name``, ``id``), as Celery's
    consumer does; the worker then fails it with NotRegistered."""

    def received(record: TaskRecord) -> None:
        if record.name not in app.engine.registry:
            if signals.task_unknown.connected:
                exc = NotRegistered(record.name)
                signals.task_unknown.send(
                    sender=sender, message=None, exc=exc, name=record.name, id=record.task_id
                )
            return
        if not signals.task_received.connected:  # checked per claimed task: no lock, no list
            return
        request = _worker_request(app, record, hostname)
        signals.task_received.send(sender=sender, request=request)

    return received


def expired_signal(app: Celery, hostname: str) -> Callable[[list[str]], None]:
    """What sends ``task_revoked`` (``expired=True``, ``terminated=False``, ``signum=None``)
    for each task the worker found past its ``expires`` and ended unrun, as Celery's worker
    does for a task it receives (or is about to run) too late; the sender is the task, the
    request the task's. Nothing is read while no receiver is connected."""

    def expired(task_ids: list[str]) -> None:
        if not signals.task_revoked.connected:
            return
        for task_id in task_ids:
            record = app.engine.read_task(task_id, fresh=True)
            task = None if record is None else app.tasks.get(record.name)
            if record is None or task is None:  # a name this worker lacks: Celery never builds it
                continue
            request = _worker_request(app, record, hostname)
            signals.task_revoked.send(
                sender=task, request=request, terminated=False, signum=None, expired=True
            )

    return expired


def time_limit_signal(app: Celery, hostname: str) -> Callable[[TaskRecord, BaseException], None]:
    """What a Celery app's worker does for a task whose process the prefork pool killed at
    its hard time limit, in the worker's main process as Celery's does: the errbacks that
    take the request, ``task_failure`` and ``task_postrun`` (state None), with the request the
    task had (see :func:`~pgtasks.compat.bridge.execution.killed_at_time_limit`)."""

    def killed(record: TaskRecord, exc: BaseException) -> None:
        task = app.tasks.get(record.name)
        if task is None:
            return
        args, kwargs = _arguments(app, record)
        request = request_from_record(record, hostname, args, kwargs)
        killed_at_time_limit(task, request, exc)

    return killed


def _arguments(app: Celery, record: TaskRecord) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The task's arguments, or none when they cannot be decoded (the worker fails such a
    task with the reason)."""
    try:
        args, kwargs = app.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
    except Exception:
        return (), {}
    return tuple(args), dict(kwargs)


def _worker_request(app: Celery, record: TaskRecord, hostname: str) -> Request:
    """The request a worker's signal carries for ``record`` (Celery's worker Request)."""
    args, kwargs = _arguments(app, record)
    return worker_request(record, hostname, args, kwargs)


class WorkerHooks:
    """What a worker of a Celery app does around pgtasks' own start-up (no-op for an App)."""

    def __init__(self, app: Any = None, hostname: str = "") -> None:
        self.app = app
        self.hostname = hostname
        # the level at which what tasks print is logged (worker_redirect_stdouts), or None
        self.redirect_level: int | None = None
        self.sender = types.SimpleNamespace(app=app, hostname=hostname)
        self._stopped = False
        # Celery's worker logs each task's outcome on "celery.app.trace": logging configs
        # name it, and error trackers (sentry-sdk) ignore it to avoid a second event.
        self.outcome_logger = "pgtasks.worker" if app is None else "celery.app.trace"
        self.received_logger = "pgtasks.worker" if app is None else "celery.worker.strategy"
        # django-celery-results' rows, mirrored once pgtasks committed each outcome
        self.mirror = mirror_of(app) if app is not None else None
        if self.mirror is not None:
            self.mirror.hostname = hostname

    @property
    def report_conf(self) -> dict[str, Any] | None:
        return None if self.app is None else report_conf(self.app)

    @property
    def on_received(self) -> Callable[[TaskRecord], None] | None:
        return None if self.app is None else received_signal(self.app, self.sender, self.hostname)

    @property
    def on_expired(self) -> Callable[[list[str]], None] | None:
        return None if self.app is None else expired_signal(self.app, self.hostname)

    @property
    def on_child_start(self) -> Callable[[], None] | None:
        """Run in each prefork child before its first task (never in the fork server, which
        must stay free of the threads and connections a receiver may open)."""
        app = self.app
        return None if app is None else lambda: _child_started(app, self.redirect_level)

    @property
    def on_child_exit(self) -> Callable[[int], None] | None:
        """Run in a prefork child that exits on its own: ``worker_process_shutdown``."""
        return None if self.app is None else _child_exiting

    @property
    def on_time_limit(self) -> Callable[[TaskRecord, BaseException], None] | None:
        return None if self.app is None else time_limit_signal(self.app, self.hostname)

    @property
    def on_heartbeat(self) -> Callable[[], None] | None:
        """``heartbeat_sent`` each time the worker's heartbeat is renewed, as Celery's worker
        sends it with each event heartbeat (the sender has ``.app`` and ``.hostname``)."""
        if self.app is None:
            return None
        sender = self.sender

        def beat() -> None:
            signals.heartbeat_sent.send(sender=sender)

        return beat

    @property
    def custom_commands(self) -> CustomCommands | None:
        return None if self.app is None else commands_of(self.app)

    @property
    def on_committed(self) -> Callable[[list[str]], None] | None:
        return self.mirror.committed if self.mirror is not None else None

    def after_start(self, then: Callable[[], object] | None) -> Callable[[], object] | None:
        if self.app is None:
            return then

        def started() -> None:
            redirect_stdouts(self.app, self.redirect_level)  # after the banner, as Celery's
            if then is not None:
                then()
            signals.worker_ready.send(sender=self.sender)

        return started

    def shutting_down(self, sig: str, how: str, exitcode: int) -> None:
        """A stop signal came (``"SIGINT", "Warm", 1``): ``worker_shutting_down``, as Celery's
        signal handlers send it (not for a remote ``shutdown`` nor a SIGHUP restart)."""
        if self.app is not None:
            signals.worker_shutting_down.send(sender=self.hostname, sig=sig, how=how, exitcode=exitcode)

    def stopped(self) -> None:
        """The worker stopped (or restarts): the loader's hook and ``worker_shutdown``, once."""
        if self.app is None or self._stopped:
            return
        self._stopped = True
        self.app.loader.shutdown_worker()
        signals.worker_shutdown.send(sender=self.sender)
        if self.mirror is not None:
            self.mirror.stop()


def use_scheduler(app: Any, scheduler: str | None) -> None:
    """Celery's ``beat --scheduler CLS`` (``-S``) and ``worker -B --scheduler CLS``: the app's
    ``beat_scheduler`` for this process, since Celery's command line wins over the setting
    (django-celery-beat's README starts its beat with ``--scheduler
    django_celery_beat.schedulers:DatabaseScheduler``). A pgtasks App has no scheduler to
    choose: a warning says so."""
    if not scheduler:
        return
    if isinstance(app, Celery):
        app.conf.beat_scheduler = scheduler
    else:
        log.warning("--scheduler %r ignored: a pgtasks App's beat fires its own schedules", scheduler)


def beat_started(app: Any, beat: Any, embedded: bool) -> None:
    """Celery's ``beat_init`` (``pgtasks beat``, after the app loader's ``init_worker``, as
    Celery's beat calls it) or ``beat_embedded_init`` (``worker -B``), sent with the beat as
    sender once it has synced its schedules; nothing for a pgtasks App."""
    if isinstance(app, Celery):
        scheduler = app.conf.beat_scheduler
        known = ("PersistentScheduler", "django_celery_beat")  # the second: bridge/django_beat.py
        if scheduler and not any(name in str(scheduler) for name in known):
            # A database scheduler (django-celery-beat's) holds periodic tasks pgtasks never
            # reads: say so loudly instead of leaving them silently unfired.
            log.warning(
                "beat_scheduler %r is not used: pgtasks beat fires the app's beat_schedule and the "
                "schedules of `pgtasks schedule`, not periodic tasks stored by another scheduler "
                "(such as those edited in Django's admin); move them to beat_schedule",
                str(scheduler),
            )
        if not embedded:
            app.loader.init_worker()  # as Celery's beat: the task modules, the loader's hook
        (signals.beat_embedded_init if embedded else signals.beat_init).send(sender=beat)


def node_name(app: Any, hostname: str | None) -> str:
    """The node name the worker of ``app`` runs as: Celery's for a Celery app (``celery@<host>``
    by default; a name without ``@`` is a host), else ``hostname`` or ``pgtasks@<host>``."""
    if isinstance(app, Celery):
        return default_nodename(hostname)
    return hostname or default_executor_id()


def worker_hooks(app: Any, args: argparse.Namespace, given: Collection[str] = ()) -> WorkerHooks:
    """Prepare ``pgtasks worker`` for a Celery app (settings into ``args``, except those the
    command line ``given`` names); send the start-up signals; return the hooks for the rest of
    its life (no-ops for a pgtasks App)."""
    if not isinstance(app, Celery):
        return WorkerHooks()
    django_support.setup_django()
    app.finalize()
    conf = app.conf
    # Celery's node names: celery@<host> by default, which probes address (`inspect ping -d
    # celery@$HOSTNAME`); a name without "@" is a host name (`-n worker1`: celery@worker1)
    args.hostname = hostname = default_nodename(args.hostname)
    hooks = WorkerHooks(app, hostname)
    app.loader.init_worker()  # the task modules, then a custom loader's on_worker_init
    # Celery's order: a celeryd_init receiver may still change the settings the worker reads
    # next (`conf.worker_concurrency = 3` for one node, as Celery's docs show).
    signals.celeryd_init.send(sender=hostname, instance=hooks.sender, conf=conf, options=_options(args))
    if not args.queues:  # task_queues (else the default queue), as app.select_queues chose
        args.queues = ",".join(app.amqp.queues.consume_from)
    read_worker_settings(conf, args, given)  # pool, concurrency, limits, timezone: checked
    disabled = flag("worker_disable_prefetch", conf.get("worker_disable_prefetch")) or getattr(
        args, "disable_prefetch", False
    )
    # Only a multiplier the project set is a bound; Celery's default leaves the worker its own
    # (4, more for short tasks: WorkerOptions.prefetch_multiplier).
    multiplier = 1 if disabled else conf.table(censored=False).get("worker_prefetch_multiplier")
    # Celery's `--prefetch-multiplier 0` stands for the flag not given: the setting decides.
    if not getattr(args, "prefetch_multiplier", None) and multiplier is not None:
        # Celery's 0 (no limit) is the default here: a claim is never unbounded.
        args.prefetch_multiplier = prefetch_setting(multiplier) or None
    signals.worker_init.send(sender=hooks.sender)
    logfile = getattr(args, "logfile", None)
    hooks.redirect_level = setup_worker_logging(
        conf, args.loglevel, getattr(args, "log_format", "text"), logfile
    )
    _warn_of_bootsteps(app)
    _warn_of_memory_broker(conf)
    signals.celeryd_after_setup.send(sender=hostname, instance=hooks.sender, conf=conf)
    if args.pool in INLINE_POOLS:
        app.loader.init_worker_process()
        signals.worker_process_init.send(sender=None)
    return hooks


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The worker's options as Celery's ``celeryd_init`` gives them: ``queues`` a list (None
    without ``-Q``), ``loglevel`` a number, no function of the command line."""
    options = {k: v for k, v in vars(args).items() if not callable(v)}
    queues = options.get("queues")
    if isinstance(queues, str):
        options["queues"] = [q.strip() for q in queues.split(",") if q.strip()]
    if isinstance(options.get("loglevel"), str):
        options["loglevel"] = mlevel(options["loglevel"].upper())
    return options


def _warn_of_memory_broker(conf: Any) -> None:
    """A worker on ``memory://`` (kombu's in-process transport, as on Celery) only sees what its
    own process sends: say so, as an operator expects a worker to serve other processes."""
    broker = broker_setting(conf)
    if broker and is_memory_broker(broker):
        log.warning(
            "broker_url %r is kombu's in-process transport: this worker uses a database of its own "
            "process and runs no task another process sends; set broker_url to the pgtasks database",
            broker,
        )


def _warn_of_bootsteps(app: Celery) -> None:
    """Bootsteps added with ``app.steps[...].add(...)`` are not run: say which."""
    added = sorted(
        f"{blueprint}:{getattr(step, '__qualname__', step)}"
        for blueprint, steps in app.steps.items()
        for step in steps
    )
    if added:
        log.warning(
            "pgtasks' worker has no bootsteps, so these added to app.steps are not run: %s "
            "(use the worker signals: worker_init, worker_ready, worker_shutdown, ...)",
            ", ".join(added),
        )


def _child_started(app: Any, redirect_level: int | None) -> None:
    django_support.close_connections_after_fork()
    redirect_stdouts(app, redirect_level)
    app.loader.init_worker_process()
    signals.worker_process_init.send(sender=None)
    app.on_after_fork.send(sender=app)


def _child_exiting(exitcode: int) -> None:
    signals.worker_process_shutdown.send(sender=None, pid=os.getpid(), exitcode=exitcode)
