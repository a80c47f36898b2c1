"""A project rendered from cookiecutter-django (tests/realapps/cookiecutter_shop, its README
says what was kept and changed), installed with pgtasks in place of celery and run as its
README and Procfile say: `manage.py migrate` (the `release:` line), its own Celery test, the
`worker:` and `beat:` lines (django-celery-beat's DatabaseScheduler, from its settings) and
`celery -A config.celery_app inspect ping`, while a periodic task stored as django-celery-beat
stores it fires."""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from pgtasks import Client
from tests.realapps.venvs import light_venv, shared_packages
from tests.support.inprocess import wait_for

PROJECT = Path(__file__).parent / "cookiecutter_shop"
TASK = "cc_shop.users.tasks.get_users_count"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # django-celery-beat declares celery: installed without it, its other dependencies are in
    # the requirements
    shared = shared_packages(
        "cookiecutter", [str(PROJECT / "requirements.txt")], ["django-celery-beat==2.9.0"]
    )
    return light_venv(tmp_path_factory.mktemp("cookiecutter"), shared)[0]


@pytest.fixture
def app_database(pg_server_url: str) -> Iterator[str]:
    """A database of its own for the project's Django models (its tests make ``test_<name>``),
    as a ``postgres://`` URL for django-environ."""
    name = f"cc_shop_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(pg_server_url)
    yield urlunsplit(("postgres", parts.netloc, f"/{name}", "", ""))
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        for database in (name, f"test_{name}"):
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _procfile(project: Path, process: str) -> tuple[dict[str, str], list[str]]:
    """The Procfile line of ``process``: its ``NAME=value`` prefixes and its command."""
    for line in (project / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name == process:
            words = shlex.split(command)
            assignments = list(itertools.takewhile(lambda word: "=" in word, words))
            return dict(w.split("=", 1) for w in assignments), words[len(assignments) :]
    raise AssertionError(f"no {process}: line in the Procfile")


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


CREATE = """
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from cc_shop.users.models import User
User.objects.create_user(username="ada", email="ada@example.com", password="pw-ada-1")
User.objects.create_user(username="alan", email="alan@example.com", password="pw-alan-1")
every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
PeriodicTask.objects.create(name="count-users", task="cc_shop.users.tasks.get_users_count", interval=every)
"""


def test_the_rendered_project_tests_and_serves_on_pgtasks(
    venv: Path, pg_url: str, app_database: str, tmp_path: Path
) -> None:
    project = tmp_path / "cookiecutter_shop"
    shutil.copytree(PROJECT, project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGTASKS_", "PYTHON", "DJANGO"))}
    env.update(
        PATH=f"{venv / 'bin'}:{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        DATABASE_URL=app_database,
        CELERY_BROKER_URL=pg_url,
    )
    python = str(venv / "bin" / "python")
    # the project's Celery test (in its own test database) while the release line migrates
    suite = subprocess.Popen(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "cc_shop/users/tests/test_tasks.py"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _, release = _procfile(project, "release")
    _run([python if release[0] == "python" else release[0], *release[1:]], project, env)
    tested = suite.communicate(timeout=300)[0]
    assert suite.returncode == 0 and "1 passed" in tested, tested
    _run([python, "manage.py", "shell", "-c", CREATE], project, env)

    processes, logs = {}, {name: tmp_path / f"{name}.log" for name in ("worker", "beat")}
    for name, log in logs.items():
        extra, command = _procfile(project, name)
        assert command[:3] == ["celery", "-A", "config.celery_app"], command
        with log.open("w") as sink:
            processes[name] = subprocess.Popen(
                [str(venv / "bin" / "celery"), *command[1:]],
                cwd=project,
                env={**env, **extra},
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
    client = Client(pg_url)
    try:
        wait_for(lambda: " ready." in logs["worker"].read_text(), timeout=90, what="the worker to start")
        ping = ["celery", "-A", "config.celery_app", "inspect", "ping"]
        assert "pong" in _run(ping, project, env)
        node = f"celery@{socket.gethostname()}"
        answer = _run([*ping, "-d", node], project, env)
        assert f"{node}: OK" in answer and "pong" in answer, answer
        # The local settings keep CELERY_TASK_ALWAYS_EAGER = True: pgtasks' beat stores each fire
        # for the worker (Celery's beat would run it eagerly in its own process)
        wait_for(
            lambda: any(t.status.value == "SUCCESS" for t in client.list_tasks(name=TASK, limit=100)),
            timeout=90,
            what="a fire of the periodic task run by the worker",
        )
        ran = [t for t in client.list_tasks(name=TASK, limit=100) if t.status.value == "SUCCESS"]
        assert all(t.task_id.startswith("sched-count-users-") for t in ran), ran
        assert client.engine.get_task(ran[0].task_id).output == "2"  # type: ignore[union-attr]
        with psycopg.connect(app_database.replace("postgres://", "postgresql://", 1)) as django_db:
            row = django_db.execute(
                "SELECT total_run_count, last_run_at FROM django_celery_beat_periodictask WHERE name = %s",
                ("count-users",),
            ).fetchone()
        assert row is not None and row[0] >= 1 and row[1] is not None, row
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for process in processes.values():
            process.wait(timeout=60)
        client.close()
    outputs = {name: log.read_text() for name, log in logs.items()}
    for name, process in processes.items():
        assert process.returncode == 0, outputs[name]
    assert f"{TASK}[" in outputs["worker"] and "succeeded" in outputs["worker"], outputs["worker"]
    assert "from a database scheduler" in outputs["beat"], outputs["beat"]
