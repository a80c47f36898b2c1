"""The libraries Celery projects pair with Celery, each installed from its package into a venv
where pgtasks stands in for celery, and driven as its documentation shows against a real
worker process (tests/realapps/libs_project): celery-once, celery-singleton,
django-celery-email, celery-progress; then pytest-celery's plugin, current (1.x) and classic
(0.0.0, the shim that enables ``celery.contrib.pytest``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.realapps.venvs import light_venv, shared_packages
from tests.support.cli import REPO
from tests.support.redis import RedisServer

PROJECT = Path(__file__).parent / "libs_project"
# celery-once imports six, which Celery used to bring (docs/celery-migration.md); pytest-celery
# 1.x brings its Docker tooling
PACKAGES = ["Django>=5.1", "pytest", "six", "redis", "django-appconf", "debugpy", "docker"]
PACKAGES += ["pytest-docker-tools", "tenacity", "psutil"]
# each declares celery as a dependency: installed without it, as a project that drops celery does
WITHOUT_THEIR_CELERY = ["celery-once", "celery-singleton", "django-celery-email", "celery-progress"]
PLUGIN_PROJECT = REPO / "tests" / "compat" / "apps" / "plugin_project"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    shared = shared_packages("libraries", PACKAGES, WITHOUT_THEIR_CELERY)
    return light_venv(tmp_path_factory.mktemp("libraries"), shared, ["pytest-celery==1.3.0"])


def _env(venv: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGTASKS_", "PYTHON", "DJANGO"))}
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '')}", VIRTUAL_ENV=str(venv), **values)
    return env


def test_each_library_works_as_its_documentation_shows(
    venv: tuple[Path, list[str]], pg_url: str, tmp_path: Path
) -> None:
    made = venv[0]
    project = tmp_path / "libs_project"
    shutil.copytree(PROJECT, project)
    locks = RedisServer().start()
    for folder in ("once", "gates"):
        (tmp_path / folder).mkdir()
    env = _env(
        made,
        CELERY_BROKER_URL=pg_url,
        ONCE_DIR=str(tmp_path / "once"),
        SINGLETON_REDIS_URL=locks.url,
        GATE_DIR=str(tmp_path / "gates"),
    )
    argv = [str(made / "bin" / "celery"), "-A", "libsite", "worker", "-P", "threads", "-c", "4"]
    worker = subprocess.Popen(
        argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        driven = subprocess.run(
            [str(made / "bin" / "python"), "drive.py"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        worker.terminate()
        output = worker.communicate(timeout=60)[0]
        locks.stop()
    assert driven.returncode == 0, driven.stdout + driven.stderr + output
    assert worker.returncode == 0, output
    seen = json.loads(driven.stdout.strip().splitlines()[-1])

    # celery-once: the duplicate is rejected at send time (graceful: an EagerResult, REJECTED)
    # while the first is queued; after the first ran its lock is released and the task sends again
    once = seen["celery_once"]
    assert once["first"] == "refreshed"
    assert once["duplicate"] == ["EagerResult", "REJECTED", None], once
    assert once["again"] == [True, "refreshed"]

    # celery-singleton: the duplicate is the running task's result; its lock, in Redis,
    # released by the task's success
    single = seen["celery_singleton"]
    assert single == {
        "first": "rebuilt",
        "duplicate_is_first": True,
        "locks_while_running": 1,
        "again": [True, "rebuilt"],
    }

    # pgtasks' own equivalent, without Redis (docs/celery-migration.md)
    assert seen["pgtasks_deduplication"] == {
        "first": "reindexed",
        "duplicate_is_first": True,
        "again": [True, "reindexed"],
    }

    # django-celery-email: send_mail sent one task, and the worker's inner backend the mail
    mail = seen["django_celery_email"]
    assert mail["send_mail"] == ["AsyncResult"]
    assert mail["outbox"] == [{"subject": "Welcome", "to": ["ada@example.com"], "body": "Hello Ada"}]
    assert "djcelery_email_send_multiple" in output

    # celery-progress: its view's JSON, while the task runs and once it is done
    progress = seen["celery_progress"]
    assert progress["running"] == {
        "state": "PROGRESS",
        "complete": False,
        "success": None,
        "progress": {
            "pending": False,
            "current": 1,
            "total": 4,
            "percent": 25.0,
            "description": "first rows",
        },
    }
    assert progress["finished"] == {
        "state": "SUCCESS",
        "complete": True,
        "success": True,
        "progress": {"pending": False, "current": 100, "total": 100, "percent": 100},
        "result": "imported",
    }


def _plugin_project_tests(venv: Path, pg_url: str, *select: str) -> str:
    """Celery's documented fixtures, in the plugin project's tests, with the pytest plugin that
    pytest-celery installs (no ``-p celery.contrib.pytest``)."""
    argv = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    argv += ["-c", str(PLUGIN_PROJECT / "plugin_project.ini"), "--rootdir", str(PLUGIN_PROJECT), *select]
    argv += [str(PLUGIN_PROJECT / "plugin_project_tests.py")]
    done = subprocess.run(
        argv,
        cwd=PLUGIN_PROJECT,
        env=_env(venv, CELERY_BROKER_URL=pg_url),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_pytest_celery_fixtures(venv: tuple[Path, list[str]], pg_url: str) -> None:
    made, pip = venv
    # 1.x: its plugin loads; celery_app and the in-process session worker are Celery's
    # (its own celery_worker is a Docker container, on Celery too)
    current = _plugin_project_tests(made, pg_url, "-k", "marker or session")
    assert "4 passed" in current, current
    # 0.0.0, the shim Celery's docs named: celery_app / celery_worker as documented
    subprocess.run([*pip, "--no-deps", "pytest-celery==0.0.0"], check=True, capture_output=True, timeout=300)
    classic = _plugin_project_tests(made, pg_url)
    assert "7 passed" in classic, classic
