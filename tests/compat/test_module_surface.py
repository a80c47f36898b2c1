"""The Celery and kombu modules that applications and their libraries import, served by
pgtasks, and the import hook that serves them in any process (pgtasks_celery.pth)."""

from __future__ import annotations

import datetime as dt
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pgtasks.compat import install
from tests.support.cli import REPO, cli_env
from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process

install()


def _python(
    code: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter of this venv: its site-packages hold pgtasks_celery.pth."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd or REPO,
        env=cli_env(None, env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_celery_loggers_are_silent_until_logging_is_set_up() -> None:
    # As Celery's (kombu's NullHandler): a web process or script importing task modules prints
    # nothing of their loggers' warnings; once logging is set up, they reach its handlers.
    done = _python(
        "from celery.utils.log import get_logger, get_task_logger\n"
        "get_task_logger('proj.tasks').warning('a task logger')\n"
        "get_logger('proj.views').error('a module logger')\n"
        "import logging; logging.basicConfig(format='%(name)s: %(message)s')\n"
        "get_task_logger('proj.tasks').warning('logging is set up')\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "proj.tasks: logging is set up\n"


def test_celery_utils_time_behaves_as_celerys() -> None:
    from celery.utils.time import (
        get_exponential_backoff_interval,
        humanize_seconds,
        maybe_make_aware,
        maybe_timedelta,
        rate,
        remaining,
        timezone,
        to_utc,
        weekday,
    )

    naive = dt.datetime(2026, 1, 2, 3, 4, 5)
    assert maybe_make_aware(naive) == naive.replace(tzinfo=dt.timezone.utc)
    berlin = timezone.get_timezone("Europe/Berlin")
    assert maybe_make_aware(naive, berlin).utcoffset() == dt.timedelta(hours=1)
    assert to_utc(dt.datetime(2026, 7, 1, 12, tzinfo=berlin)).hour == 10
    assert maybe_timedelta(30) == dt.timedelta(seconds=30) and maybe_timedelta("x") == "x"
    assert rate("120/m") == 2.0 and rate("3600/h") == 1.0 and rate(None) == 0
    assert weekday("monday") == 1 and weekday("sun") == 0
    assert humanize_seconds(120, prefix="in ") == "in 2.00 minutes" and humanize_seconds(0) == "now"
    assert (
        get_exponential_backoff_interval(2, 3, 100) == 16
        and get_exponential_backoff_interval(2, 10, 100) == 100
    )
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert remaining(start, dt.timedelta(hours=1), now=start) == dt.timedelta(hours=1)
    with pytest.raises(KeyError):
        weekday("funday")


def test_crontab_parser_reads_a_field_as_celery_does() -> None:
    from celery.schedules import ParseException, crontab_parser

    assert crontab_parser(60).parse("*/15") == {0, 15, 30, 45}
    assert crontab_parser(24).parse("22-2") == {22, 23, 0, 1, 2}  # wraps past the end
    assert crontab_parser(7).parse("mon-fri") == {1, 2, 3, 4, 5}
    assert crontab_parser(7).parse("Sunday,sat") == {0, 6}
    assert crontab_parser(12, 1).parse("jan,mar-may") == {1, 3, 4, 5}
    assert crontab_parser(31, 1).parse("*/10") == {1, 11, 21, 31}
    assert crontab_parser(60).parse("1-10/3") == {1, 4, 7, 10}
    for bad, error, message in [
        ("1,,2", ParseException, "empty part"),
        ("", ParseException, "empty part"),
        ("-1", ParseException, "negative"),
        ("60", ValueError, "Invalid end range: 60 > 59"),
        ("abc", ValueError, "'abc'"),
        ("*/0", ValueError, "step cannot be zero"),
        ("5/20", ValueError, "a step needs"),
    ]:
        with pytest.raises(error, match=message):
            crontab_parser(60).parse(bad)
    with pytest.raises(ValueError, match="Invalid beginning range: 0 < 1"):
        crontab_parser(31, 1).parse("0")


def test_crontabs_are_equal_when_they_match_the_same_times() -> None:
    from celery.schedules import crontab

    assert crontab(minute="*/15") == crontab(minute="0,15,30,45")
    assert crontab(day_of_week="mon-fri", hour=9) == crontab(day_of_week="1-5", hour="9")
    assert crontab(minute="*/15") != crontab(minute="*/20")
    assert crontab(day_of_month="L") != crontab(day_of_month="28-31")
    assert len({crontab(minute="*/15"), crontab(minute="0,15,30,45")}) == 1


def test_color_formatter_as_logging_configurations_name_it(capsys: pytest.CaptureFixture[str]) -> None:
    import logging
    import logging.config

    from celery.utils.log import ColorFormatter

    handler = {"class": "logging.StreamHandler", "formatter": "c", "stream": "ext://sys.stdout"}
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {
                "c": {"()": "celery.utils.log.ColorFormatter", "fmt": "%(levelname)s %(message)s"}
            },
            "handlers": {"h": handler},
            "loggers": {"colored": {"handlers": ["h"], "level": "DEBUG", "propagate": False}},
        }
    )
    log = logging.getLogger("colored")
    log.info("plain %s", 1)
    log.error("bad %s", 2)
    log.warning("odd %s %s", 3)  # arguments that do not fit: a line saying so, not an exception
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "INFO plain 1"
    assert out[1] == f"{ColorFormatter.COLORS['ERROR']}ERROR bad 2{ColorFormatter.RESET}"
    assert out[2].startswith("<Unrepresentable str 'odd %s %s'")
    plain = ColorFormatter("%(message)s", use_color=False)
    assert plain.format(logging.makeLogRecord({"msg": "x", "levelname": "ERROR"})) == "x"


def test_functional_and_serialization_helpers_libraries_import(tmp_path: Path) -> None:
    import pickle

    from celery.utils import gen_task_name, memoize
    from celery.utils.functional import dictfilter, lazy, maybe_evaluate, padlist, regen, uniq
    from celery.utils.serialization import (
        UnpickleableExceptionWrapper,
        get_pickleable_exception,
        get_pickled_exception,
    )

    pulled: list[int] = []

    def numbers() -> Any:
        for n in range(3):
            pulled.append(n)
            yield n

    lazily = regen(numbers())
    assert lazily[0] == 0 and pulled == [0]  # read as far as needed
    assert list(lazily) == [0, 1, 2] == list(lazily) and len(lazily) == 3
    calls: list[int] = []

    @memoize(maxsize=2)
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert [square(2), square(2), square(3), square(4), square(2)] == [4, 4, 9, 16, 4]
    assert calls == [2, 3, 4, 2]  # 2 was evicted by 3 and 4
    square.clear()  # type: ignore[attr-defined]
    assert list(uniq([1, 2, 1, 3])) == [1, 2, 3] and padlist([1], 3, 0) == [1, 0, 0]
    assert dictfilter({"a": 1, "b": None}, c=None, e=2) == {"a": 1, "e": 2}
    assert maybe_evaluate(lazy(lambda: 5)) == 5 and maybe_evaluate(6) == 6

    class Local(Exception):  # defined in a function: it does not pickle
        pass

    nearest = get_pickleable_exception(Local("boom"))  # the nearest class that pickles
    assert type(nearest) is Exception and pickle.loads(pickle.dumps(nearest)).args == ("boom",)
    carried = UnpickleableExceptionWrapper.from_exception(Local("boom"))
    restored = get_pickled_exception(pickle.loads(pickle.dumps(carried)))
    assert type(restored).__name__ == "Local" and restored.args == ("boom",)
    assert get_pickleable_exception(ValueError("x")).args == ("x",)
    from celery import Celery

    app = Celery("proj", broker=f"sqlite:///{tmp_path / 'names.sqlite3'}")
    assert gen_task_name(app, "add", "proj.tasks") == "proj.tasks.add"
    assert gen_task_name(app, "add", "__main__") == "proj.add"


def test_default_app_and_the_work_controller_type() -> None:
    from celery import current_app
    from celery.app import default_app
    from celery.contrib.testing.worker import TestWorkController
    from celery.worker import WorkController

    assert default_app.main == current_app.main
    assert issubclass(TestWorkController, WorkController)
    with pytest.raises(NotImplementedError, match="start_worker"):
        WorkController()


def test_celery_node_names_and_their_format_signs() -> None:
    import os

    from celery.utils.nodenames import anon_nodename, host_format, node_format, worker_direct
    from celery.utils.text import simple_format

    assert host_format("%h|%n|%d", host="web1.example.com") == "web1.example.com|web1|example.com"
    assert node_format("/var/log/%n-%h.log", "w1@web1.example.com") == "/var/log/w1-web1.example.com.log"
    assert node_format("%p %n", "web1") == "web1 celery"
    assert anon_nodename("h") == f"gen{os.getpid()}@h" and anon_nodename("h", "p").startswith("p")
    assert simple_format("%%h and 100%", {"h": "x"}) == "%h and 100%"
    assert simple_format("%c", {"c": lambda: "called"}) == "called" and simple_format("", {}) == ""
    with pytest.raises(ValueError, match="Unknown format %z in string 'a%z'"):
        host_format("a%z", host="h")
    queue = worker_direct("w1@h")
    assert (queue.name, queue.routing_key) == ("w1@h.dq2", "w1@h")


def test_kombu_json_encoding_and_exceptions() -> None:
    from kombu.exceptions import DecodeError, KombuError
    from kombu.utils.encoding import bytes_to_str, safe_repr
    from kombu.utils.json import dumps, loads, register_type

    class Point:
        def __init__(self, x: int) -> None:
            self.x = x

    register_type(Point, "point", lambda p: p.x, Point)
    text = dumps({"when": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), "p": Point(3)})
    back = loads(text.encode())
    assert back["when"] == "2026-01-01T00:00:00+00:00" and isinstance(back["p"], Point) and back["p"].x == 3
    assert issubclass(DecodeError, KombuError) and bytes_to_str(b"ab") == "ab"

    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert "Unprintable" in safe_repr(Unprintable())


def test_the_modules_django_celery_beat_and_results_import() -> None:
    from celery import current_app, maybe_signature, schedules, states  # noqa: F401
    from celery.backends.base import BaseDictBackend, KeyValueStoreBackend, get_current_task  # noqa: F401
    from celery.beat import ScheduleEntry, Scheduler  # noqa: F401
    from celery.result import GroupResult, allow_join_result, result_from_tuple  # noqa: F401
    from celery.utils import cached_property, get_full_cls_name  # noqa: F401
    from celery.utils.serialization import b64decode, b64encode
    from kombu.utils import symbol_by_name

    class Clocked(schedules.BaseSchedule):  # django-celery-beat's clocked, reduced
        def is_due(self, last_run_at: dt.datetime) -> schedules.schedstate:
            return schedules.schedstate(is_due=True, next=5.0)

    assert Clocked().is_due(dt.datetime.now()).next == 5.0
    assert isinstance(schedules.crontab(minute="0"), schedules.BaseSchedule)
    assert (
        b64decode(b64encode(b"x")) == b"x"
        and symbol_by_name("os.path:join") is importlib.import_module("os.path").join
    )

    class Results(BaseDictBackend):  # django-celery-results' DatabaseBackend, reduced
        pass

    with pytest.raises(NotImplementedError, match="own database tables"):
        Results(app=current_app).store_result("id", 1, "SUCCESS")


def test_a_module_pgtasks_does_not_serve_fails_clearly() -> None:
    with pytest.raises(
        ModuleNotFoundError, match=r"celery\.no_such_module.*pgtasks serves Celery's public modules"
    ):
        importlib.import_module("celery.no_such_module")


def test_any_process_of_the_venv_imports_celery_from_pgtasks(tmp_path: Path) -> None:
    done = _python(
        "import sys; assert 'pgtasks' not in sys.modules\n"
        "import celery, kombu\n"
        "from celery import Celery, shared_task\n"
        "from celery.utils.log import get_task_logger\n"
        "print(celery.__name__, kombu.Queue.__module__)",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pgtasks.compat.celery", "pgtasks.compat.kombu.entity"]
    # A process that never imports celery never imports pgtasks either.
    untouched = _python(
        "import sys, json; print('pgtasks' in sys.modules or 'pgtasks.compat' in sys.modules)"
    )
    assert untouched.stdout.strip() == "False"
    off = _python("import celery", {"PGTASKS_CELERY": "0"}, cwd=tmp_path)
    assert off.returncode == 1 and "No module named 'celery'" in off.stderr


def test_a_real_celery_wins_unless_pgtasks_celery_is_set(tmp_path: Path) -> None:
    # A stand-in for the real distribution: a package named celery ahead on the path.
    package = tmp_path / "site" / "celery"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("REAL = True\n")
    (package / "__main__.py").write_text("def main():\n    print('the real celery command')\n")
    # the stand-in first; then this checkout, whose commands are the ones under test
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(REPO)])}
    real = _python("import celery; print(getattr(celery, 'REAL', False))", env, cwd=tmp_path)
    assert real.stdout.strip() == "True", real.stderr
    ours = _python("import celery; print(celery.__name__)", {**env, "PGTASKS_CELERY": "1"}, cwd=tmp_path)
    assert ours.stdout.strip() == "pgtasks.compat.celery", ours.stderr
    command = Path(sys.executable).parent / "celery"
    delegated = subprocess.run(
        [str(command), "--version"],
        env=cli_env(None, env),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert delegated.stdout.strip() == "the real celery command", delegated.stderr
    forced = subprocess.run(
        [str(command), "--version"],
        env=cli_env(None, {**env, "PGTASKS_CELERY": "1"}),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert forced.stdout.strip() == "5.7.0 (pgtasks)", forced.stderr  # Celery's banner


def test_the_celery_command_line_of_a_procfile_runs_a_pgtasks_worker(pg_url: str, tmp_path: Path) -> None:
    from tests.compat.apps import results_app as proj

    command = Path(sys.executable).parent / "celery"
    worker = subprocess.Popen(
        [
            str(command),
            "-A",
            "tests.compat.apps.results_app",
            "worker",
            "-l",
            "info",
            "-Q",
            "celery,named",
            "-c",
            "2",
            "-P",
            "threads",
            "-n",
            "procfile@host",
        ],
        cwd=REPO,
        env=cli_env(pg_url, {"PGTASKS_TEST_LEDGER": str(tmp_path / "ledger")}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    proj.app.conf.broker_url = pg_url
    try:
        assert proj.add.delay(2, 3).get(timeout=60) == 5
    finally:
        worker.terminate()
        output, _ = worker.communicate(timeout=60)
        proj.app.close()
    assert worker.returncode == 0, output
    assert "procfile@host" in output


def test_an_abortable_task_stops_when_aborted(pg_url: str, tmp_path: Path) -> None:
    from celery.contrib.abortable import AbortableAsyncResult

    from tests.compat.apps import abortable_app

    abortable_app.app.conf.broker_url = pg_url
    worker = worker_process(pg_url, tmp_path / "ledger", "w-abort", app="tests.compat.apps.abortable_app")
    try:
        sent = abortable_app.long_running.delay()
        assert isinstance(sent, AbortableAsyncResult)
        wait_for(lambda: sent.state == "PROGRESS", timeout=60, what="the task to start")
        assert not sent.is_aborted()
        sent.abort()
        assert sent.get(timeout=60) == "aborted"
    finally:
        stop(worker)
        abortable_app.app.close()


def test_celery_check_reports_a_module_it_cannot_serve(sqlite_url: str) -> None:
    from tests.support.cli import run_pgtasks

    done = run_pgtasks("-A", "tests.compat.apps.unserved_app", "celery-check", url=sqlite_url)
    assert done.returncode == 1, done.stderr
    assert "import celery.events" in done.stdout and "Celery events are not emitted" in done.stdout
    assert "Traceback" not in done.stderr


def test_celery_utility_and_testing_modules_work() -> None:
    import datetime as dt
    import logging

    from celery.app.defaults import DEFAULTS
    from celery.app.log import TaskFormatter
    from celery.contrib.testing.app import TestApp, setup_default_app
    from celery.contrib.testing.tasks import ping
    from celery.contrib.testing.worker import start_worker
    from celery.utils.collections import AttributeDict, LimitedSet
    from celery.utils.dispatch import Signal
    from celery.utils.graph import DependencyGraph
    from celery.utils.iso8601 import parse_iso8601
    from celery.utils.saferepr import saferepr
    from celery.utils.text import abbrtask, pluralize, truncate
    from kombu.entity import Queue

    assert truncate("abcdef", 3) == "abc..." and pluralize(2, "task") == "tasks"
    assert abbrtask("proj.tasks.long_module.add", 12).endswith("[.]add")
    assert len(saferepr(list(range(10_000)), maxlen=50)) <= 53
    assert parse_iso8601("2026-11-25T07:00:00Z") == dt.datetime(2026, 11, 25, 7, tzinfo=dt.timezone.utc)
    seen = LimitedSet(maxlen=2)
    seen.update(["a", "b", "c"])
    assert "a" not in seen and list(seen) == ["b", "c"]
    settings = AttributeDict(x=1)
    settings.y = 2
    assert (settings.x, settings["y"]) == (1, 2)
    assert "broker_url" in DEFAULTS and "task_serializer" in DEFAULTS
    assert isinstance(Signal("custom"), Signal) and Queue("q").name == "q"
    graph = DependencyGraph([("b", ["a"])])
    assert graph.topsort() == ["a", "b"]

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep()
    handler.setFormatter(TaskFormatter("%(task_name)s[%(task_id)s]: %(message)s"))
    logger = logging.getLogger("test.taskformatter")
    logger.addHandler(handler)
    app = TestApp(name="formatter")

    @app.task(name="t.logs", bind=True)
    def logs(self: object) -> str:
        logger.warning("inside")
        return "ok"

    with setup_default_app(app), start_worker(app, perform_ping_check=False):
        assert ping.delay().get(timeout=30) == "pong"
        result = logs.delay()
        assert result.get(timeout=30) == "ok"
    logger.warning("outside")
    assert records == [f"t.logs[{result.id}]: inside", "???[???]: outside"]
    app.close()


def test_worker_internals_import_and_refuse_when_used() -> None:
    from celery import bootsteps
    from celery.events.state import State

    class HealthStep(bootsteps.StartStopStep):  # a project's custom step: defined, never run
        requires = ()

    assert issubclass(HealthStep, bootsteps.StartStopStep)
    refused = r"celery\.events\.state\.State is not supported.*dashboard"
    with pytest.raises(NotImplementedError, match=refused):
        State()


def test_the_worker_task_lines_carry_celerys_messages_and_data(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    import celery.app.trace
    from celery.contrib.testing.app import TestApp, setup_default_app
    from celery.contrib.testing.worker import start_worker
    from celery.utils.nodenames import anon_nodename

    app = TestApp(name="tracelines")

    @app.task(name="t.shown", bind=True)
    def shown(self: Any, card: str, amount: int = 1) -> list[Any]:
        return [self.request.argsrepr, self.request.kwargsrepr]

    @app.task(name="t.breaks")
    def breaks(card: str) -> None:
        raise ValueError("declined")

    caplog.set_level(logging.INFO)
    with setup_default_app(app), start_worker(app, perform_ping_check=False) as worker:
        assert worker.hostname == anon_nodename()
        assert list(app.control.inspect().ping() or {}) == [anon_nodename()]
        hidden = shown.s("4111 1111 1111 1111", amount=5).set(
            argsrepr="('****',)", kwargsrepr="{'amount': 5}"
        )
        result = hidden.delay()
        assert result.get(timeout=30) == ["('****',)", "{'amount': 5}"]
        failed = breaks.delay("4111 1111 1111 1111")
        with pytest.raises(ValueError, match="declined"):
            failed.get(timeout=30)

    def lines(task_id: str) -> list[tuple[str, int, str, str, str]]:
        return [
            (r.name, r.levelno, r.msg, r.data["args"], r.data["kwargs"])  # type: ignore[attr-defined]
            for r in caplog.records
            if r.name in ("celery.worker.strategy", "celery.app.trace") and r.data["id"] == task_id  # type: ignore[attr-defined]
        ]

    trace = celery.app.trace
    assert lines(result.id) == [
        ("celery.worker.strategy", logging.INFO, trace.LOG_RECEIVED, "('****',)", "{'amount': 5}"),
        ("celery.app.trace", logging.INFO, trace.LOG_SUCCESS, "('****',)", "{'amount': 5}"),
    ]
    card = repr(("4111 1111 1111 1111",))
    assert lines(failed.id) == [
        ("celery.worker.strategy", logging.INFO, trace.LOG_RECEIVED, card, "{}"),
        ("celery.app.trace", logging.ERROR, trace.LOG_FAILURE, card, "{}"),
    ]
    [failure] = [r for r in caplog.records if r.name == "celery.app.trace" and r.levelno == logging.ERROR]
    assert failure.getMessage() == f"Task t.breaks[{failed.id}] raised unexpected: ValueError('declined')"
    messages = " ".join(r.getMessage() for r in caplog.records)
    # the arguments stay in data (the task ids, random, may hold the digits too)
    assert "4111" not in messages.replace(result.id, "").replace(failed.id, "")
    # monitoring shows what the sender asked too: the task's record and Flower's task view
    from pgtasks.dashboard.flower_tasks import TaskView

    info = app.get_task(result.id)
    assert info is not None and info.shown_arguments == ("('****',)", "{'amount': 5}")
    assert TaskView((), app.shown_inputs).arguments(info) == ("('****',)", "{'amount': 5}")
    plain = app.get_task(failed.id)
    assert plain is not None and plain.shown_arguments == (None, None)
    assert TaskView((), app.shown_inputs).arguments(plain) == ("['4111 1111 1111 1111']", "{}")
    app.close()
