"""The parts of Celery's app object built on demand: ``app.amqp`` and ``select_queues``,
``app.log``, ``app.events`` and ``setup_security`` (refused), and ``app.Worker``/
``WorkController``/``Beat`` run in a real process embedding them (tests/compat/apps/
embedded_app.py), stopped by their methods and by real signals."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click import Option

from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.amqp import AMQP
from pgtasks.compat.celery.app.base import Celery
from pgtasks.compat.celery.app.log import Logging, TaskFormatter
from pgtasks.compat.celery.app.programs import BEAT_OPTIONS, WORKER_OPTIONS
from pgtasks.compat.celery.utils.log import LoggingProxy, mlevel
from pgtasks.compat.kombu.entity import Queue
from tests.support.cli import REPO, cli_env
from tests.support.inprocess import wait_for

SQLITE = "sqlite:///components-never-opened.sqlite3"  # these apps open no connection


def app_with(**settings: Any) -> Celery:
    return Celery("components", broker=SQLITE, set_as_current=False, **settings)


# -- app.amqp and select_queues ---------------------------------------------------------------
def test_amqp_queues_are_the_declared_ones_and_select_restricts_what_is_consumed() -> None:
    assert list(app_with().amqp.queues) == ["celery"]  # no task_queues: the default queue
    app = app_with(task_queues=[Queue("a"), "b"], task_default_queue="a")
    queues = app.amqp.queues
    assert list(queues) == ["a", "b"] and isinstance(queues["b"], Queue)
    assert queues is app.amqp.queues  # read once, as in Celery
    assert app.amqp.default_queue is queues["a"]
    assert list(queues.consume_from) == ["a", "b"]
    app.select_queues(["b", Queue("c")])  # an undeclared queue is created (task_create_missing_queues)
    assert list(queues.consume_from) == ["b", "c"] and "c" in queues
    app.select_queues(None)  # keeps the selection
    assert list(queues.consume_from) == ["b", "c"]
    queues.deselect("c")
    assert list(queues.consume_from) == ["b"]
    assert queues.format() == ".> b                exchange=b key=b"
    old_form = app.amqp.Queues({"v": {"exchange": "media", "routing_key": "media.v"}})
    assert old_form["v"].routing_key == "media.v" and getattr(old_form["v"].exchange, "name", None) == "media"
    strict = app.amqp.Queues([Queue("a")], create_missing=False)
    with pytest.raises(KeyError, match="'zz'"):
        strict.select("a,zz")


def test_amqp_router_routes_by_task_routes_to_declared_queues() -> None:
    app = app_with(task_routes={"proj.video": {"queue": "media"}})
    routed = app.amqp.router.route({}, "proj.video")
    assert routed["queue"] is app.amqp.queues["media"]
    assert app.amqp.router.route({"queue": "fast"}, "proj.video")["queue"].name == "fast"
    assert app.amqp.router.route({}, "proj.other")["queue"].name == "celery"


def test_component_classes_given_by_class_or_path() -> None:
    app = Celery(
        "custom", broker=SQLITE, set_as_current=False, log=QuietLogging, amqp=f"{__name__}:CountingAMQP"
    )
    assert type(app.log) is QuietLogging and app.log.app is app
    assert type(app.amqp).__name__ == "CountingAMQP" and app.amqp is app.amqp


class QuietLogging(Logging):
    """A custom ``Celery(log=...)`` class."""


class CountingAMQP(AMQP):
    """A custom ``Celery(amqp='module:Class')`` class."""


# -- refused ----------------------------------------------------------------------------------
def test_events_and_security_are_refused_saying_why() -> None:
    app = app_with()
    why = "Celery events are not emitted by pgtasks: read task states from the database"
    for name in ("State", "Receiver", "Dispatcher"):
        with pytest.raises(
            NotImplementedError, match=f"celery.app.events.{name} is not supported by pgtasks: {why}"
        ):
            getattr(app.events, name)()
    with pytest.raises(  # and what to do instead
        NotImplementedError,
        match=r"^app\.setup_security: message signing is not supported by pgtasks: .* remove "
        r"setup_security\(\) and task_serializer 'auth', and limit who may write the pgtasks schema",
    ):
        app.setup_security()


# -- app.log ----------------------------------------------------------------------------------
@pytest.fixture
def clean_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Root and task loggers without handlers, restored (with stdout/stderr) afterwards."""
    root, task = logging.getLogger(), logging.getLogger("celery.task")
    saved = (root.handlers[:], root.level, task.handlers[:], task.level, task.propagate)
    for name in ("CELERY_LOG_LEVEL", "CELERY_LOG_FILE", "CELERY_LOG_REDIRECT", "CELERY_LOG_REDIRECT_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    root.handlers, task.handlers = [], []
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # put back at the end, whatever replaced them
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    try:
        yield
    finally:
        for handler in [*root.handlers, *task.handlers]:
            handler.close()
        root.handlers, root.level, task.handlers, task.level, task.propagate = saved


def test_log_setup_configures_root_and_task_loggers_once_with_signals(
    clean_logging: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logging.getLogger().handlers = []  # pytest's capture of this test (put back by the fixture)
    app = app_with(worker_task_log_format="%(task_name)s|%(message)s")
    assert (app.log.loglevel, app.log.already_setup) == (logging.WARNING, False)
    assert app.log.format == "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"
    seen: list[tuple[str, int, str | None]] = []

    def after(
        sender: object, logger: logging.Logger, loglevel: int, logfile: str | None, **kw: object
    ) -> None:
        seen.append((logger.name, loglevel, logfile))

    signals.after_setup_logger.connect(after, weak=False)
    signals.after_setup_task_logger.connect(after, weak=False)
    try:
        logfile = str(tmp_path / "worker.log")
        assert app.log.setup("info", logfile, redirect_stdouts=True, redirect_level="ERROR") == []
        assert app.log.setup_logging_subsystem("debug") is None  # once
    finally:
        signals.after_setup_logger.disconnect(after)
        signals.after_setup_task_logger.disconnect(after)
    assert seen == [("root", logging.INFO, logfile), ("celery.task", logging.INFO, logfile)]
    task_logger = logging.getLogger("celery.task")
    assert task_logger.propagate is False and isinstance(task_logger.handlers[0].formatter, TaskFormatter)
    logging.getLogger("proj").info("from the app")
    task_logger.warning("from a task")
    print("printed")  # stdout now goes to the celery.redirected logger at ERROR
    assert os.environ["CELERY_LOG_REDIRECT"] == "1" and os.environ["CELERY_LOG_FILE"] == logfile
    for handler in [*logging.getLogger().handlers, *task_logger.handlers]:
        handler.flush()
    lines = Path(logfile).read_text().splitlines()
    assert lines[0].endswith("INFO/MainProcess] from the app"), lines
    assert lines[1] == "???|from a task" and lines[2].endswith("ERROR/MainProcess] printed"), lines


def test_log_setup_leaves_logging_to_a_setup_logging_receiver(clean_logging: None) -> None:
    logging.getLogger().handlers = []  # pytest's capture of this test (put back by the fixture)
    app = app_with()

    def configure(sender: object, loglevel: int, **kw: object) -> str:
        return f"configured at {loglevel}"

    signals.setup_logging.connect(configure, weak=False)
    try:
        replies = app.log.setup(logging.ERROR, redirect_stdouts=True)
    finally:
        signals.setup_logging.disconnect(configure)
    assert [reply for _, reply in replies or []] == [f"configured at {logging.ERROR}"]
    assert logging.getLogger().handlers == [] and not isinstance(sys.stdout, LoggingProxy)


def test_log_redirects_colours_and_levels(clean_logging: None) -> None:
    app = app_with()
    records: list[logging.LogRecord] = []
    logger = app.log.get_default_logger("components.redirected")
    assert logger is logging.getLogger("components.redirected")
    logger.addHandler(CollectingHandler(records))
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    proxy = app.log.redirect_stdouts_to_logger(logger, "INFO", stdout=False)
    assert sys.stderr is proxy and sys.stdout is not proxy and not proxy.isatty()
    assert proxy.write("two\nlines\n") == len("two\nlines\n")
    proxy.write("\n")  # nothing to log
    assert [(r.levelno, r.getMessage()) for r in records] == [(logging.INFO, "two\nlines")]
    # a handler writing to the redirected stream itself does not loop
    logger.addHandler(logging.StreamHandler(proxy))
    proxy.write("once")
    assert [r.getMessage() for r in records][-1] == "once" and len(records) == 2
    assert app.log.supports_color(False) is False
    assert app.log.supports_color(True, logfile="w.log") is False  # never into a file
    assert app.log.supports_color(True) is False  # stderr is not a terminal here
    shades = app.log.colored(enabled=True)
    assert shades.enabled is False and str(shades.red("x")) == "x"
    on = type(shades)(enabled=True)
    assert str(on.red("x")) == "\x1b[1;31mx\x1b[0m" and (on.bold("a") + "b").no_color() == "ab"
    with pytest.raises(AttributeError, match="colored has no style 'pink': one of black, red"):
        getattr(on, "pink")  # noqa: B009
    assert mlevel("warning") == logging.WARNING == mlevel(30)
    with pytest.raises(
        ValueError, match="unknown log level 'LOUD': use DEBUG, INFO, WARNING, ERROR or CRITICAL"
    ):
        LoggingProxy(logger, "LOUD")


class CollectingHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# -- Worker, WorkController, Beat: options --------------------------------------------------
def test_program_options_become_the_commands_flags_and_others_are_refused() -> None:
    app = app_with()
    options = {"concurrency": 2, "pool_cls": "threads", "queues": ["a", Queue("b")], "loglevel": 20}
    options |= {"beat": True, "optimization": "fair", "task_events": True, "without_gossip": False}
    worker = app.Worker(**options, time_limit=5, max_tasks_per_child=None)
    assert worker.argv == [
        *("worker", "--concurrency=2", "--pool=threads", "--queues=a,b", "--loglevel=INFO", "--beat"),
        *("--optimization=fair", "--task-events", "--time-limit=5.0"),
    ]
    assert worker.hostname == "celery@" + worker.hostname.split("@")[1] and worker.exitcode is None
    # Celery's attributes of the worker: as given, else the app's settings
    from pgtasks.worker.pools import ThreadPool
    from pgtasks.worker.prefork import PreforkPool

    assert (worker.pool_cls, worker.concurrency, worker.task_time_limit) == (ThreadPool, 2, 5)
    app.conf.update(worker_concurrency=3, worker_prefetch_multiplier=8, task_soft_time_limit=4)
    defaulted = app.Worker()
    assert (defaulted.pool_cls, defaulted.concurrency, defaulted.prefetch_multiplier) == (PreforkPool, 3, 8)
    assert defaulted.task_soft_time_limit == 4 and defaulted.pool_cls.__module__ == "pgtasks.worker.prefork"
    assert app.Worker(pool="gevent").pool_cls is ThreadPool  # Celery's green pools run on threads
    assert app.WorkController(hostname="w1").hostname == "celery@w1"
    app.user_options["worker"] |= {Option(("-N", "--note"), help="added"), Option(("--on",), is_flag=True)}
    assert app.Worker(note="-x", on=True).argv == ["worker", "--note=-x", "--on"]
    beat = app.Beat(max_interval=1, loglevel="debug", scheduler="x")
    assert beat.argv == ["beat", "--max-interval=1.0", "--loglevel=DEBUG", "--scheduler=x"]
    refusals: list[tuple[type[Exception], str, Callable[[], object]]] = [
        (
            TypeError,
            r"^Worker\(\) got options pgtasks' worker does not have: consumer_cls, ready_callback "
            r"\(it takes O, autoscale, beat, concurrency,",
            lambda: app.Worker(consumer_cls="x", ready_callback=print),
        ),
        (
            TypeError,
            r"^Beat\(\) got options pgtasks' beat does not have: socket_timeout ",
            lambda: app.Beat(socket_timeout=30),
        ),
        (
            TypeError,
            r"^WorkController\(\): option concurrency takes a whole number, not '3'$",
            lambda: app.WorkController(concurrency="3"),
        ),
        (
            TypeError,
            r"^Beat\(\): option max_interval takes a number of seconds, not True$",
            lambda: app.Beat(max_interval=True),
        ),
        (
            ValueError,
            r"^Worker\(\): option pool takes a pool name, one of prefork, threads, solo, asyncio, "
            r"eventlet, gevent, not 'processes'$",
            lambda: app.Worker(pool="processes"),
        ),
        (
            ValueError,
            r"^Worker\(\): option queues takes queue names .*, not ','$",
            lambda: app.Worker(queues=","),
        ),
        (
            ValueError,
            r"^Worker\(\): unknown log level 'loud': use DEBUG, INFO, WARNING, ERROR or CRITICAL$",
            lambda: app.Worker(loglevel="loud"),
        ),
    ]
    for error, message, make in refusals:
        with pytest.raises(error, match=message):
            make()


def test_every_accepted_option_is_a_flag_the_command_line_reads() -> None:
    from pgtasks.cli.main import _parser  # the real parser of `pgtasks worker` / `pgtasks beat`

    # a valid value for each kind of option (by its converter; None: a switch)
    samples = {"_whole": 1, "_seconds": 1, "_level": "info", "_pool": "threads", "_queues": "a", "_text": "x"}
    samples |= {"_autoscale": (4, 2)}
    checked = {"optimization": "fair", "O": "fair"}  # text the flag checks
    app, parser = app_with(), _parser()
    for make, accepted in ((app.Worker, WORKER_OPTIONS), (app.Beat, BEAT_OPTIONS)):
        for name, (_, convert) in accepted.items():
            value = checked.get(name) or (samples[convert.__name__] if convert else True)
            argv = make(**{name: value}).argv
            parser.parse_args(["-A", "proj", *argv])  # exits 2 on a flag it does not know


def test_programs_run_on_the_main_thread_only_and_stop_does_nothing_when_not_running() -> None:
    worker = app_with().WorkController(pool="solo")
    worker.stop()  # not running: no signal is sent to this process
    worker.terminate()
    errors: list[BaseException] = []

    def start() -> None:
        try:
            worker.start()
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=start, name="embedder")
    thread.start()
    thread.join(10)
    assert [str(e) for e in errors] == [
        "WorkController runs on the main thread, which receives the stop signals, not on 'embedder': for a "
        "worker on a thread of a test use celery.contrib.testing.worker.start_worker"
    ]


# -- Worker, WorkController, Beat: a real process embedding them ------------------------------
def test_embedded_worker_and_beat_run_and_stop(pg_url: str, tmp_path: Path) -> None:
    output = tmp_path / "embedded.log"
    with output.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.compat.apps.embedded_app"],
            cwd=REPO,
            env=cli_env(pg_url, {"PYTHONUNBUFFERED": "1", "PGTASKS_CELERY": "1"}),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    client = Celery("embedded-client", broker=pg_url, set_as_current=False)

    def shown(text: str) -> bool:
        if process.poll() is not None and text not in output.read_text():
            raise AssertionError(f"the program ended ({process.returncode}):\n{output.read_text()}")
        return text in output.read_text()

    try:
        # 1. stop() before the worker served: it stops once it serves
        wait_for(lambda: shown("early exit 0"), timeout=60, what="the early worker's stop")
        # 2. app.Worker consumes the queue select_queues chose; a task's stop() ends it
        wait_for(lambda: shown("first@embedded ready."), timeout=60, what="the worker")
        banner = output.read_text().split(" first@embedded v", 1)[1]
        assert "--- queues:      a\n" in banner and "--- concurrency: 2 (threads)" in banner
        assert client.send_task("embedded.add", (2, 3), queue="a").get(timeout=60) == 5
        refused = client.send_task("embedded.stop_worker", queue="a").get(timeout=60)
        assert refused == "the worker first@embedded is running already"
        wait_for(lambda: shown("worker exit 0 first@embedded"), timeout=60, what="the warm shutdown")
        # 3. app.Beat fires into queue b (nobody consumes it yet) until SIGTERM
        wait_for(lambda: bool(client.list_tasks(name="embedded.add", queue="b")), timeout=15, what="a tick")
        process.send_signal(signal.SIGTERM)
        wait_for(lambda: shown("beat exit 0"), timeout=60, what="the beat's stop")
        # 4. WorkController(queues="b") runs the ticks; terminate() ends the process at once
        tick = client.list_tasks(name="embedded.add", queue="b")[-1]
        assert client.AsyncResult(tick.task_id).get(timeout=60) == 2
        client.send_task("embedded.terminate_worker", queue="b")
        assert process.wait(timeout=60) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        client.close()
    text = output.read_text()
    assert "cold shutdown" in text and "not reached" not in text, text
    assert "Traceback" not in text, text
