"""A FastAPI + Celery project (tests/realapps/fastapi_shop), installed into a fresh venv without
celery or kombu, started exactly as its README says: its Procfile's `celery -A
project.main.celery worker` line and its own pytest suite against that worker. The project
builds its app from settings through `current_app`, imports `celery.utils.time`, routes with
a function and reads results with `AsyncResult`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realapps.test_django_shop import _env, _run, fresh_venv, procfile_worker

PROJECT = Path(__file__).parent / "fastapi_shop"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    wanted = [line for line in (PROJECT / "requirements.txt").read_text().split() if line != "celery"]
    made, _ = fresh_venv(tmp_path_factory.mktemp("realapp-fastapi"), wanted)  # celery: pgtasks is it
    yield made


def test_the_project_runs_unchanged_without_celery(venv: Path, pg_url: str, tmp_path: Path) -> None:
    project = tmp_path / "fastapi_shop"
    shutil.copytree(PROJECT, project)
    env = _env(venv, pg_url)
    with procfile_worker(venv, project, env) as output:
        python = str(venv / "bin" / "python")
        suite = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project, env)
        assert "3 passed" in suite, suite
    assert "high:add" in output[0] and "succeeded" in output[0], output
