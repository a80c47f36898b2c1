"""A Django + Celery project (tests/realapps/django_shop), installed into a fresh venv without
celery or kombu, started exactly as its README says: `manage.py check` with
django-celery-beat and django-celery-results in INSTALLED_APPS, its own pytest-django suite
(eager mode flipped by the settings fixture), its Procfile's `celery -A shop worker` line, a
plain script that sends a task to that worker, and `celery -A shop beat` firing the periodic
tasks stored by django-celery-beat. Then the same in a venv where the real celery is installed
too (django-celery-beat's dependencies bring it), with PGTASKS_CELERY=1. And the rows
django-celery-results' admin reads, as its backend writes them on Celery."""

from __future__ import annotations

import datetime as dt
import fcntl
import itertools
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pgtasks import Client
from pgtasks.scheduler import admin
from pgtasks.scheduler.definitions import parse_due
from tests.support.cli import REPO
from tests.support.inprocess import wait_for

PROJECT = Path(__file__).parent / "django_shop"
# django-celery-beat and -results declare celery as a dependency: installed without it
# (--no-deps) and with the dependencies they do need, the path "celery absent" of the docs.
LIBRARIES = ["django-celery-beat", "django-celery-results"]
THEIR_DEPENDENCIES = ["django-timezone-field", "python-crontab", "cron-descriptor"]


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_venv(root: Path, packages: list[str]) -> tuple[Path, list[str]]:
    """A venv in ``root`` with pgtasks' wheel (built from this checkout) and ``packages``;
    returns it and its pip command for more."""
    wheels = root / "wheels"
    # One build at a time: the test processes (xdist) share this checkout's build directory.
    with open(Path(tempfile.gettempdir()) / "pgtasks-wheel-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(REPO)]
        _run(build, REPO)
    _run([sys.executable, "-m", "venv", str(root / "venv")], root)
    python = root / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, *map(str, wheels.glob("pgtasks-*.whl")), *packages], root)
    return root / "venv", pip


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project's venv without celery, built once per run: the test processes (xdist) that
    run this module's tests share it (the session's folder holds theirs)."""
    shared = os.environ.get("PYTEST_XDIST_WORKER") is not None
    root = tmp_path_factory.getbasetemp().parent / "realapp" if shared else tmp_path_factory.mktemp("realapp")
    root.mkdir(exist_ok=True)
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "built").exists():
            _build_venv(root)
            (root / "built").touch()
    yield root / "venv"


def _build_venv(root: Path) -> None:
    # ephem: the project's solar schedules need it, as with Celery (its requirements.txt)
    made, pip = fresh_venv(root, ["Django>=5.1", "pytest", "pytest-django", "ephem", *THEIR_DEPENDENCIES])
    _run([*pip, "--no-deps", *LIBRARIES], root)
    # the path finder: pgtasks_celery.pth (installed with the wheel) answers for celery and kombu
    check = (
        "import importlib.machinery as m; assert not any(map(m.PathFinder.find_spec, ('celery', 'kombu')))"
    )
    _run([str(made / "bin" / "python"), "-c", check], root)


def _project(tmp_path: Path) -> Path:
    copy = tmp_path / "django_shop"
    shutil.copytree(PROJECT, copy)
    return copy


def _env(venv: Path, database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGTASKS_", "PYTHON", "DJANGO"))}
    env.update(
        PATH=f"{venv / 'bin'}:{env.get('PATH', '')}", CELERY_BROKER_URL=database_url, VIRTUAL_ENV=str(venv)
    )
    return env


def test_the_project_runs_unchanged_without_celery(venv: Path, pg_url: str, tmp_path: Path) -> None:
    project = _project(tmp_path)
    env = _env(venv, pg_url)
    python = str(venv / "bin" / "python")
    real_celery = subprocess.run(
        [python, "-c", "import importlib.machinery as m; print(m.PathFinder.find_spec('celery'))"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert real_celery.stdout.strip() == "None"  # the real celery is not installed
    _check_test_and_serve(venv, project, env)
    command = venv / "bin" / "celery"

    # `celery -A shop beat` with django-celery-beat's DatabaseScheduler: periodic tasks stored
    # in Django's database, as its admin stores them, fire once per due time with two beats
    # running; a row disabled meanwhile stops firing.
    _run([python, "manage.py", "shell", "-c", CREATE_PERIODIC], project, env)
    logs = [tmp_path / f"beat{n}.log" for n in range(2)]
    beats = []
    for log in logs:
        with log.open("w") as sink:
            argv = [str(command), "-A", "shop", "beat"]
            beats.append(subprocess.Popen(argv, cwd=project, env=env, stdout=sink, stderr=subprocess.STDOUT))
    client = Client(pg_url)
    try:
        wait_for(lambda: len(_fired(client, "every-second-add")) >= 3, timeout=90, what="three fires")
        # CELERY_BEAT_SCHEDULE's entry is a row (django-celery-beat's DatabaseScheduler writes
        # them at start): it fires from there, and staff disable it in the admin
        wait_for(lambda: _fired(client, "add-every-2s"), timeout=60, what="the beat_schedule entry")
        assert admin.get(client.engine, "add-every-2s").source == "config:django_celery_beat"
        noon = float(_run([python, "manage.py", "shell", "-c", DISABLE_AND_ADD], project, env).split()[-1])
        for disabled in ("every-second-add", "add-every-2s"):
            wait_for(
                lambda: admin.get(client.engine, disabled).status.value == "INACTIVE",  # noqa: B023
                timeout=60,
                what=f"the disabled row {disabled}'s schedule to stop",
            )
        stopped_at = len(_fired(client, "every-second-add"))
        wait_for(lambda: len(_fired(client, "after-disable")) >= 2, timeout=60, what="the new row to fire")
        # a beat started again fires the anchored row neither early nor twice
        wait_for(lambda: _fired(client, "anchored"), timeout=60, what="the anchored row to fire")
        beats[0].terminate()
        assert beats[0].wait(timeout=60) == 0, logs[0].read_text()
        with logs[0].open("a") as sink:
            argv = [str(command), "-A", "shop", "beat"]
            beats[0] = subprocess.Popen(argv, cwd=project, env=env, stdout=sink, stderr=subprocess.STDOUT)
        ready = lambda: logs[0].read_text().count("beat ready") == 2  # noqa: E731
        wait_for(ready, timeout=60, what="the restarted beat")
        wait_for(lambda: len(_fired(client, "anchored")) >= 3, timeout=60, what="two fires after the restart")
        assert _fired(client, "later")
        # the solar row fired at its event (the next whole second), as Celery's solar schedule
        wait_for(lambda: _fired(client, "at-noon"), timeout=60, what="the solar row to fire")
        assert [_due(t).timestamp() for t in _fired(client, "at-noon")] == [math.ceil(noon)], noon
        # the restarted beat wrote the entry's row again, and left it disabled
        assert admin.get(client.engine, "add-every-2s").status.value == "INACTIVE"
        # a tick that read the schedule just before the sync may still fire it once
        assert len(_fired(client, "every-second-add")) <= stopped_at + 1
    finally:
        for beat in beats:
            beat.terminate()
            beat.wait(timeout=60)
        client.close()
    for beat, log in zip(beats, logs, strict=True):
        text = log.read_text()
        assert beat.returncode == 0, text
        assert "from a database scheduler (followed while beat runs)" in text, text
        assert "is not used" not in text, text
    fired = _fired(client, "every-second-add")
    assert len(fired) == len(set(fired))  # one task per due time, whichever beat fired it
    anchored = sorted(_due(task_id) for task_id in _fired(client, "anchored"))
    assert all(int(due.timestamp()) % 4 == 1 for due in anchored), anchored  # last_run_at's phase
    assert all(b - a == dt.timedelta(seconds=4) for a, b in itertools.pairwise(anchored)), anchored
    assert len(_fired(client, "once")) == 1  # a one_off row fires once, then is disabled
    # each fire carries the row's headers and django-celery-beat's (self.request.periodic_task_name)
    meta = json.loads(client.engine.get_task(fired[0]).meta or "{}")  # type: ignore[union-attr]
    assert meta["headers"] == {
        "x-tag": "hv",
        "periodic_task_name": "every-second-add",
        "celery_beat_task": True,
    }
    seen = json.loads(
        _run([python, "manage.py", "shell", "-c", ADMIN_AND_ROWS], project, env).splitlines()[-1]
    )
    assert seen["form"] == 200 and seen["form_lists_task"], seen
    assert seen["run"] == 200 and seen["ran"], seen
    rows = seen["rows"]
    # last_run_at and total_run_count kept on the rows by the beat that fired them
    # (a row saved by staff while a beat runs may lose a count, on Celery too: save() writes it)
    after = rows["after-disable"]
    assert after["runs"] == len(_fired(client, "after-disable")) and after["last"], rows
    assert rows["once"] == {"runs": 0, "last": False, "enabled": False, "task": "orders.tasks.add"}, rows
    assert rows["celery.backend_cleanup"]["task"] == "celery.backend_cleanup"
    assert rows["add-every-2s"]["enabled"] is False and rows["add-every-2s"]["task"] == "orders.tasks.add"
    entry_fire = json.loads(client.engine.get_task(min(_fired(client, "add-every-2s"))).meta or "{}")  # type: ignore[union-attr]
    assert entry_fire["headers"] == {
        "x-from": "settings",
        "periodic_task_name": "add-every-2s",
        "celery_beat_task": True,
    }
    assert seen["cleanup"] == ["0", "4", 43200]
    # a row with a start_time first fires at it (its next whole second), as django-celery-beat
    started = min(_due(task_id) for task_id in _fired(client, "later"))
    assert started.timestamp() == math.ceil(seen["later"]), (started, seen["later"])
    sent = client.list_tasks(name="orders.tasks.add", limit=10000)
    # "Run selected tasks" sent it once (send.py's task ran earlier), naming the row as
    # django-celery-beat names it (a periodic_task_name header, or option in its older versions)
    by_admin = [t for t in sent if not t.task_id.startswith("sched-") and t.status.value == "ENQUEUED"]
    assert len(by_admin) == 1, by_admin
    stored = client.engine.get_task(by_admin[0].task_id)
    assert stored is not None and stored.meta is not None, stored
    assert json.loads(stored.meta)["headers"]["periodic_task_name"] == "after-disable", stored.meta


def _check_test_and_serve(venv: Path, project: Path, env: dict[str, str]) -> None:
    """As the README says: `manage.py check`, the project's own pytest suite, the Procfile's
    `celery -A shop worker` line and `python send.py` against that worker."""
    python = str(venv / "bin" / "python")
    assert "System check identified no issues" in _run([python, "manage.py", "check"], project, env)
    _run([python, "manage.py", "migrate", "--noinput"], project, env)
    suite = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project, env)
    assert "2 passed" in suite, suite
    with procfile_worker(venv, project, env) as output:
        sent = _run([python, "send.py"], project, env, timeout=120)
        assert sent.strip() == "42"
    assert "orders.tasks.add" in output[0] and "succeeded" in output[0], output


@contextmanager
def procfile_worker(venv: Path, project: Path, env: dict[str, str]) -> Iterator[list[str]]:
    """The project's Procfile `worker:` line (a `celery ...` command) running while inside;
    yields a list that holds its output once it has stopped (cleanly: exit code 0)."""
    procfile = (project / "Procfile").read_text().split(":", 1)[1].split()
    assert procfile[0] == "celery"
    worker = subprocess.Popen(
        [str(venv / "bin" / "celery"), *procfile[1:]],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    try:
        yield output
    finally:
        worker.terminate()
        output.append(worker.communicate(timeout=60)[0])
    assert worker.returncode == 0, output[0]


@pytest.fixture(scope="module")
def venv_with_celery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pgtasks beside the real celery, which django-celery-beat's dependencies bring back."""
    root = tmp_path_factory.mktemp("realapp-celery")
    made, _ = fresh_venv(root, ["Django>=5.1", "pytest", "pytest-django", *LIBRARIES])  # with their deps
    yield made


def test_beat_takes_django_celery_beats_scheduler_from_its_command_line(
    venv: Path, pg_url: str, tmp_path: Path
) -> None:
    """`celery -A proj beat --scheduler django_celery_beat.schedulers:DatabaseScheduler`, as
    django-celery-beat's README and testdrivenio's django-celery-project start it, with no
    beat_scheduler setting: the rows fire. The option was ignored, and so were the rows."""
    project = _project(tmp_path)
    env = {**_env(venv, pg_url), "SHOP_BEAT_SCHEDULER": ""}
    python = str(venv / "bin" / "python")
    _run([python, "manage.py", "migrate", "--noinput"], project, env)
    _run([python, "manage.py", "shell", "-c", CREATE_PERIODIC], project, env)
    log = tmp_path / "beat.log"
    scheduler = "django_celery_beat.schedulers:DatabaseScheduler"
    with log.open("w") as sink:
        argv = [str(venv / "bin" / "celery"), "-A", "shop", "beat", "-l", "info", "--scheduler", scheduler]
        beat = subprocess.Popen(argv, cwd=project, env=env, stdout=sink, stderr=subprocess.STDOUT)
    client = Client(pg_url)
    try:
        wait_for(lambda: len(_fired(client, "every-second-add")) >= 2, timeout=90, what="two fires")
    finally:
        beat.terminate()
        beat.wait(timeout=60)
        client.close()
    text = log.read_text()
    assert beat.returncode == 0 and "from a database scheduler" in text and "ignoring" not in text, text


def test_the_project_runs_with_the_real_celery_installed_and_pgtasks_celery_1(
    venv_with_celery: Path, pg_url: str, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    env = _env(venv_with_celery, pg_url)
    python = str(venv_with_celery / "bin" / "python")
    which = "import celery, kombu; print(celery.Celery.__module__, kombu.__name__)"
    real = _run([python, "-c", which], project, env)
    assert real.split()[0].startswith("celery."), real  # without the switch: the real celery
    env["PGTASKS_CELERY"] = "1"
    ours = _run([python, "-c", which], project, env)
    assert ours.split()[0].startswith("pgtasks."), ours
    _check_test_and_serve(venv_with_celery, project, env)


CREATE_PERIODIC = """
from django_celery_beat.models import IntervalSchedule, PeriodicTask
every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
PeriodicTask.objects.create(
    name="every-second-add", task="orders.tasks.add", interval=every, args="[20, 22]",
    headers='{"x-tag": "hv"}',
)
slow = IntervalSchedule.objects.create(every=3, period=IntervalSchedule.SECONDS)
PeriodicTask.objects.create(name="once", task="orders.tasks.add", interval=slow, args="[2, 2]", one_off=True)
import datetime
from django.utils import timezone
# last ran at a second that is 1 modulo 4: it fires every 4 s after it (not at multiples of 4)
four = IntervalSchedule.objects.create(every=4, period=IntervalSchedule.SECONDS)
now = timezone.now().timestamp()
ran = int(now) // 4 * 4 + 1
ran = datetime.datetime.fromtimestamp(ran - 4 if ran > now else ran, datetime.timezone.utc)
PeriodicTask.objects.create(
    name="anchored", task="orders.tasks.add", interval=four, args="[4, 4]", last_run_at=ran
)
"""

# What staff do in django-celery-beat's admin (its own views, through Django's test client):
# the add form, which imports the app's task modules through app.loader to list the tasks,
# and the "Run selected tasks" action; then the rows as django-celery-beat keeps them.
ADMIN_AND_ROWS = """
import json
from django.contrib.auth.models import User
from django.test import Client
from django_celery_beat.models import PeriodicTask
user = User.objects.create_superuser("staff", "staff@example.com", "pw")
browser = Client(HTTP_HOST="localhost")
browser.force_login(user)
form = browser.get("/admin/django_celery_beat/periodictask/add/")
row = PeriodicTask.objects.get(name="after-disable")
ran = browser.post(
    "/admin/django_celery_beat/periodictask/",
    {"action": "run_tasks", "_selected_action": [row.pk]},
    follow=True,
)
rows = {
    r.name: {
        "runs": r.total_run_count, "last": r.last_run_at is not None, "enabled": r.enabled, "task": r.task
    }
    for r in PeriodicTask.objects.all()
}
cleanup = PeriodicTask.objects.get(name="celery.backend_cleanup")
print(json.dumps({
    "form": form.status_code,
    "form_lists_task": "orders.tasks.add" in form.content.decode(),
    "run": ran.status_code,
    "ran": "1 task was successfully run" in ran.content.decode(),
    "rows": rows,
    "cleanup": [cleanup.crontab.minute, cleanup.crontab.hour, cleanup.expire_seconds],
    "later": PeriodicTask.objects.get(name="later").start_time.timestamp(),
}))
"""

DISABLE_AND_ADD = """
from django_celery_beat.models import IntervalSchedule, PeriodicTask
for name in ("every-second-add", "add-every-2s"):
    row = PeriodicTask.objects.get(name=name)
    row.enabled = False
    row.save()
every = IntervalSchedule.objects.get(every=1, period=IntervalSchedule.SECONDS)
PeriodicTask.objects.create(name="after-disable", task="orders.tasks.add", interval=every, args="[1, 1]")
# added while the beats run, starting in 3 seconds
import datetime
from django.utils import timezone
soon = timezone.now() + datetime.timedelta(seconds=3)
PeriodicTask.objects.create(
    name="later", task="orders.tasks.add", interval=every, args="[3, 3]", start_time=soon
)
# a solar row: solar noon at the equator, at the longitude where it comes in 4 seconds
import ephem
from django_celery_beat.models import SolarSchedule
def noon(longitude):
    place = ephem.Observer()
    place.lat, place.lon, place.elevation, place.pressure, place.horizon = "0", str(longitude), 0, 0, "0"
    return place.next_transit(ephem.Sun(), start=ephem.Date(timezone.now() - datetime.timedelta(hours=1)))
wanted, longitude = ephem.Date(timezone.now() + datetime.timedelta(seconds=4)), 0.0
for _ in range(3):
    longitude = round(((longitude + (noon(longitude) - wanted) * 360 + 180) % 360) - 180, 6)
solar = SolarSchedule.objects.create(event="solar_noon", latitude=0, longitude=longitude)
PeriodicTask.objects.create(name="at-noon", task="orders.tasks.add", solar=solar, args="[6, 6]")
print(noon(longitude).datetime().replace(tzinfo=datetime.timezone.utc).timestamp())
"""


def _due(task_id: str) -> dt.datetime:
    """The due time of a fired task's id (``sched-<name>-<due time>``)."""
    return parse_due(task_id[-len("2026-01-01T00:00:00Z") :])


def _fired(client: Client, schedule: str) -> list[str]:
    """Ids of the tasks the schedule fired (``sched-<name>-<due time>``)."""
    tasks = client.list_tasks(name="orders.tasks.add", limit=10000)
    return [t.task_id for t in tasks if t.task_id.startswith(f"sched-{schedule}-")]


@contextmanager
def worker_logging_to(log: Path, venv: Path, project: Path, env: dict[str, str]) -> Iterator[None]:
    """`celery -A shop worker` (prefork, Celery's default pool) running while inside."""
    with log.open("w") as sink:
        options = ["-l", "info", "-c", "2", "-P", "prefork"]
        argv = [str(venv / "bin" / "celery"), "-A", "shop", "worker", *options]
        worker = subprocess.Popen(argv, cwd=project, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    assert worker.returncode == 0, log.read_text()


def test_django_celery_results_rows_as_the_library_writes_them(
    venv: Path, pg_url: str, tmp_path: Path
) -> None:
    """With result_backend "django-db" the worker writes TaskResult, GroupResult and
    ChordCounter rows field by field as django-celery-results' backend writes them on Celery
    (the reference: rows captured from Celery 5.6 and django-celery-results 2.6), and with
    "django-cache" its cache keys; a mirror that cannot write leaves the task unaffected."""
    project = _project(tmp_path)
    env = _env(venv, pg_url)
    python = str(venv / "bin" / "python")
    gates = tmp_path / "gates"
    gates.mkdir()
    log = tmp_path / "worker.log"
    env.update(SHOP_GATES=str(gates), SHOP_WORKER_LOG=str(log))
    _run([python, "manage.py", "migrate", "--noinput"], project, env)
    with worker_logging_to(log, venv, project, env):
        seen = json.loads(
            _run([python, "manage.py", "shell", "-c", RESULT_ROWS], project, env).splitlines()[-1]
        )
    node = f"celery@{socket.gethostname()}"
    json_content = {"content_type": "application/json", "content_encoding": "utf-8"}

    def expect(row: dict[str, Any], **fields: Any) -> None:
        base = {"periodic_task_name": None, "worker": node, "traceback": None, "meta": '{"children": []}'}
        wanted = {**base, **json_content, **fields}
        assert {k: row[k] for k in wanted} == wanted, row
        assert row["date_created"] <= row["date_done"], row

    started = json.loads(seen["started"]["result"])
    assert started["hostname"] == node and isinstance(started["pid"], int), seen["started"]
    expect(seen["started"], status="STARTED", task_name="orders.tasks.tracked", task_kwargs="\"{'y': 1}\"")
    assert seen["started"]["date_started"] is not None
    expect(seen["halfway"], status="HALFWAY", result='{"done": 1}')
    expect(seen["tracked"], status="SUCCESS", result="10")
    # date_created is the first store (STARTED); date_started stays; date_done moves on
    assert seen["tracked"]["date_created"] == seen["started"]["date_created"]
    assert seen["tracked"]["date_started"] == seen["started"]["date_started"] is not None
    retry = seen["retry"]
    expect(
        retry,
        status="RETRY",
        task_name="orders.tasks.flaky",
        task_args='"(1,)"',
        task_kwargs='"{}"',
        result='{"exc_type": "RuntimeError", "exc_message": ["try 0"], "exc_module": "builtins"}',
        traceback=retry["traceback"],
        meta=json.dumps({"children": [[[retry["task_id"], None], None]]}),
    )
    # celery-progress reads the countdown from this last line
    assert retry["traceback"].endswith("celery.exceptions.Retry: Retry in 1s: RuntimeError('try 0')\n")
    expect(seen["retried"], status="SUCCESS", result="1", task_args='"(1,)"', date_started=None)
    expect(seen["success"], status="SUCCESS", result="5", task_name="orders.tasks.add", task_args='"(2, 3)"')
    # django-celery-beat's header names the periodic task
    expect(
        seen["kwargs"],
        result="3",
        task_args='"()"',
        task_kwargs="\"{'x': 1, 'y': 2}\"",
        periodic_task_name="nightly",
    )
    failure = seen["failure"]
    expect(
        failure,
        status="FAILURE",
        task_name="orders.tasks.boom",
        task_args="\"('bad input',)\"",
        result='{"exc_type": "ValueError", "exc_message": ["bad input"], "exc_module": "builtins"}',
        traceback=failure["traceback"],
    )
    assert failure["traceback"].startswith("Traceback (most recent call last):\n")
    assert failure["traceback"].endswith("raise ValueError(message)\nValueError: bad input\n")
    assert seen["ignored"] is None  # ignore_result: no row, as on Celery
    # revoked before it ran: what Celery's worker writes when it discards the message
    expect(
        seen["revoked"],
        status="REVOKED",
        result=json.dumps(
            {"exc_type": "TaskRevokedError", "exc_message": ["revoked"], "exc_module": "celery.exceptions"}
        ),
        task_name=None,
        task_args=None,
        task_kwargs=None,
        worker=None,
        date_started=None,
    )

    group = seen["group"]
    assert seen["plain_group"] == 0  # only GroupResult.save() writes one
    assert group["row"]["result"] == json.dumps(
        [[group["id"], None], [[[m, None], None] for m in group["members"]]]
    )
    assert {k: group["row"][k] for k in json_content} == json_content
    assert group["row"]["date_created"] <= group["row"]["date_done"]

    counter = seen["counter"]
    assert counter["count"] == 2 and json.loads(counter["sub_tasks"]) == [
        [[m, None], None] for m in counter["header"]
    ], counter
    assert seen["chord"] == 3
    expect(seen["body"], status="SUCCESS", task_name="orders.tasks.tsum", task_args='"([1, 2],)"', result="3")

    lost, value = seen["unmirrored"]
    assert value == 42 and seen["lost_row"] is None
    expect(seen["after"], status="SUCCESS", result="2")
    text = log.read_text()
    assert text.count("could not mirror the state of") == 1, text  # once; the next ones go on
    assert text.count(f"orders.tasks.add[{lost}] succeeded") == 1, text  # never run again
    assert seen["admin"][0] == 200 and seen["admin"][1] >= 1, seen["admin"]

    # "django-cache": Celery's meta dict under celery-task-meta-<id>, in the project's cache
    env.update(SHOP_RESULT_BACKEND="django-cache", SHOP_CACHE_DIR=str(tmp_path / "cache"))
    with worker_logging_to(tmp_path / "worker-cache.log", venv, project, env):
        cached = json.loads(
            _run([python, "manage.py", "shell", "-c", CACHE_KEYS], project, env).splitlines()[-1]
        )
    ok, failed = cached
    assert {k: v for k, v in ok.items() if k not in ("task_id", "date_done")} == {
        "status": "SUCCESS",
        "result": 5,
        "traceback": None,
        "children": [],
        "name": "orders.tasks.add",
        "args": [2, 3],
        "kwargs": {},
        "worker": node,
        "retries": 0,
        "queue": "celery",
    }, ok
    assert dt.datetime.fromisoformat(ok["date_done"]).tzinfo is not None
    assert failed["status"] == "FAILURE" and failed["result"] == "ValueError('bad input')", failed
    assert failed["traceback"].endswith("ValueError: bad input\n"), failed


CACHE_KEYS = """
import json, time
from django.core.cache import cache
from orders.tasks import add, boom
done = [add.delay(2, 3), boom.delay("bad input")]
for result in done:
    result.get(timeout=60, propagate=False)
found = []
deadline = time.monotonic() + 60
for result in done:
    meta = None
    while meta is None or meta["status"] != result.state:  # written just after the outcome
        assert time.monotonic() < deadline, meta
        time.sleep(0.02)
        meta = cache.get(f"celery-task-meta-{result.id}")
    found.append(dict(meta, result=meta["result"] if meta["status"] == "SUCCESS" else repr(meta["result"])))
print(json.dumps(found))
"""
RESULT_ROWS = """
import json, os, time
from celery import chord, group
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django_celery_results.models import ChordCounter, GroupResult, TaskResult
from orders.tasks import add, boom, flaky, gated, quiet, tracked, tsum
from shop.celery import app

gates = os.environ["SHOP_GATES"]


def until(check, what):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise TimeoutError(what)


def row(task_id, status=None):
    found = TaskResult.objects.filter(task_id=task_id).first()
    if found is None or (status is not None and found.status != status):
        return None
    return {f.name: getattr(found, f.name) for f in TaskResult._meta.fields}


def final(result):
    try:
        result.get(timeout=60)
    except Exception:
        pass
    return until(lambda: row(result.id, result.state), f"the row of {result.id}")


seen = {}
watched = tracked.delay(f"{gates}/t", y=1)
seen["started"] = until(lambda: row(watched.id, "STARTED"), "STARTED")
open(f"{gates}/t.1", "w").close()
seen["halfway"] = until(lambda: row(watched.id, "HALFWAY"), "HALFWAY")
open(f"{gates}/t.2", "w").close()
seen["tracked"] = final(watched)
retried = flaky.delay(1)
seen["retry"] = until(lambda: row(retried.id, "RETRY"), "RETRY")
seen["retried"] = final(retried)
seen["success"] = final(add.delay(2, 3))
seen["kwargs"] = final(add.apply_async(kwargs={"x": 1, "y": 2}, headers={"periodic_task_name": "nightly"}))
seen["failure"] = final(boom.delay("bad input"))
ignored = quiet.delay(1)
until(lambda: app.engine.get_task(ignored.id).status.is_terminal, "the ignored task")
final(add.delay(0, 0))  # committed after it: the mirror has handled the ignored task
seen["ignored"] = row(ignored.id)

later = add.apply_async((1, 1), countdown=600)
later.revoke()
seen["revoked"] = row(later.id)

members = group(add.s(i, i) for i in range(2)).apply_async()
members.get(timeout=60)
seen["plain_group"] = GroupResult.objects.filter(group_id=members.id).count()
members.save()
saved = GroupResult.objects.get(group_id=members.id)
seen["group"] = {"id": members.id, "members": [r.id for r in members.results], "row": {
    f.name: getattr(saved, f.name) for f in GroupResult._meta.fields
}}

both = chord([gated.s(f"{gates}/c", 1), gated.s(f"{gates}/c", 2)], tsum.s()).apply_async()
header = both.parent
counter = ChordCounter.objects.get(group_id=header.id)
seen["counter"] = {"group_id": counter.group_id, "sub_tasks": counter.sub_tasks, "count": counter.count,
                   "header": [r.id for r in header.results]}
open(f"{gates}/c", "w").close()
seen["chord"] = both.get(timeout=60)
until(lambda: not ChordCounter.objects.filter(group_id=header.id).exists(), "the counter to go")
seen["body"] = final(both)

with connection.cursor() as cursor:  # the mirror's table is gone: the task is not affected
    cursor.execute("ALTER TABLE django_celery_results_taskresult RENAME TO hidden_taskresult")
lost = add.delay(20, 22)
seen["unmirrored"] = [lost.id, lost.get(timeout=60)]
log = os.environ["SHOP_WORKER_LOG"]
until(lambda: f"could not mirror the state of {lost.id}" in open(log).read(), "the failed write logged")
with connection.cursor() as cursor:
    cursor.execute("ALTER TABLE hidden_taskresult RENAME TO django_celery_results_taskresult")
seen["after"] = final(add.delay(1, 1))
seen["lost_row"] = row(lost.id)

user = User.objects.create_superuser("staff", "staff@example.com", "pw")
browser = Client(HTTP_HOST="localhost")
browser.force_login(user)
page = browser.get("/admin/django_celery_results/taskresult/")
seen["admin"] = [page.status_code, page.content.decode().count(retried.id)]
print(json.dumps(seen, default=str))
"""
STAFF = """
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
User.objects.create_superuser("staff", "staff@example.com", "pw-for-tests")
"""


def test_staff_schedule_tasks_in_django_celery_beats_admin(venv: Path, pg_url: str, tmp_path: Path) -> None:
    """django-celery-beat's admin in a real browser, against the project's `runserver`, its
    `celery -A shop beat` and its Procfile worker: the schedule add forms, a periodic task
    added through its form runs, "Disable selected tasks" stops it, "Run selected tasks" runs
    it once more, "Enable selected tasks" schedules it again."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.expected_conditions import staleness_of
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from tests.support.browser import chromium

    project = _project(tmp_path)
    env = _env(venv, pg_url)
    python = str(venv / "bin" / "python")
    _run([python, "manage.py", "shell", "-c", STAFF], project, env)  # migrated, with a superuser
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    site = f"http://127.0.0.1:{port}/admin/"
    logs = {name: (tmp_path / f"{name}.log").open("w") for name in ("server", "beat")}
    commands = {
        "server": [python, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        "beat": [str(venv / "bin" / "celery"), "-A", "shop", "beat"],
    }
    started = [
        subprocess.Popen(argv, cwd=project, env=env, stdout=logs[name], stderr=subprocess.STDOUT)
        for name, argv in commands.items()
    ]
    client = Client(pg_url)

    def fired(ran: bool = False) -> list[str]:
        tasks = client.list_tasks(name="orders.tasks.add", limit=1000)
        return [
            t.task_id
            for t in tasks
            if t.task_id.startswith("sched-from-admin-") and (not ran or t.status.value == "SUCCESS")
        ]

    try:
        with procfile_worker(venv, project, env), chromium(eager=True) as browser:
            wait_for(lambda: _answers(site + "login/"), timeout=60, what="runserver")

            def submit(path: str, fields: dict[str, str], choices: dict[str, str] | None = None) -> str:
                browser.get(site + path)
                # open the collapsed sections (the task's arguments), as staff do to fill them
                browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
                for name, value in fields.items():
                    box = browser.find_element(By.NAME, name)
                    box.clear()
                    box.send_keys(value)
                for name, text in (choices or {}).items():
                    Select(browser.find_element(By.NAME, name)).select_by_visible_text(text)
                return sent(browser.find_element(By.CSS_SELECTOR, "input[type=submit]"))

            def sent(button: WebElement) -> str:
                """Click and return the page that the submission loads (not the one left)."""
                button.click()
                WebDriverWait(browser, 30).until(staleness_of(button))
                return browser.page_source

            def act(action: str) -> str:
                browser.get(site + "django_celery_beat/periodictask/")
                browser.find_element(
                    By.XPATH, "//tr[.//a[text()='from-admin']]//input[@name='_selected_action']"
                ).click()
                Select(browser.find_element(By.NAME, "action")).select_by_value(action)
                return sent(browser.find_element(By.NAME, "index"))

            submit("login/", {"username": "staff", "password": "pw-for-tests"})
            added = "was added successfully"
            assert added in submit(
                "django_celery_beat/intervalschedule/add/", {"every": "2"}, {"period": "Seconds"}
            )
            assert added in submit("django_celery_beat/crontabschedule/add/", {"minute": "30", "hour": "4"})
            solar = {"latitude": "48.85", "longitude": "2.35"}
            assert added in submit("django_celery_beat/solarschedule/add/", solar, {"event": "Sunrise"})
            clocked = {"clocked_time_0": "2030-01-01", "clocked_time_1": "04:00:00"}
            assert added in submit("django_celery_beat/clockedschedule/add/", clocked)
            # the add form lists the app's tasks (app.loader.import_default_modules())
            page = submit(
                "django_celery_beat/periodictask/add/",
                {"name": "from-admin", "args": "[7, 8]"},
                {"regtask": "orders.tasks.add", "interval": "every 2 seconds"},
            )
            assert added in page, page
            wait_for(lambda: fired(ran=True), timeout=60, what="the periodic task added in the admin to run")
            assert "successfully disabled" in act("disable_tasks")
            wait_for(
                lambda: admin.get(client.engine, "from-admin").status.value == "INACTIVE",
                timeout=30,
                what="the disabled task's schedule to stop",
            )
            stopped_at = len(fired())
            assert "1 task was successfully run" in act("run_tasks")
            by_hand = [
                t
                for t in client.list_tasks(name="orders.tasks.add", limit=1000)
                if not t.task_id.startswith("sched-")
            ]
            assert len(by_hand) == 1
            assert client.AsyncResult(by_hand[0].task_id).get(timeout=60) == 15
            # a tick that read the schedule just before the sync may still fire it once
            assert len(fired()) <= stopped_at + 1
            assert "successfully enabled" in act("enable_tasks")
            wait_for(
                lambda: admin.get(client.engine, "from-admin").status.value == "ACTIVE",
                timeout=30,
                what="the enabled task's schedule to start again",
            )
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=60)
        for sink in logs.values():
            sink.close()
        client.close()
    assert started[1].returncode == 0, (tmp_path / "beat.log").read_text()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False
