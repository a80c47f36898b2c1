"""Celery's pytest plugin (``celery.contrib.pytest``) and ``start_worker``: a project's test
module, written against Celery's documented fixtures, run by a pytest of its own."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import REPO, cli_env

PROJECT = "tests/compat/apps/plugin_project"


def _run_project_tests(module: str) -> str:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    argv += ["-p", "celery.contrib.pytest", "-c", f"{PROJECT}/plugin_project.ini", "--rootdir", PROJECT]
    argv += [f"{PROJECT}/{module}"]
    done = subprocess.run(argv, cwd=REPO, env=cli_env(None), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_projects_tests_written_with_celerys_fixtures_pass() -> None:
    assert "7 passed" in _run_project_tests("plugin_project_tests.py")


def test_the_guides_worker_and_app_parameters_reach_them() -> None:
    # celery_worker_parameters' queues (the worker consumed only 'celery': the task waited),
    # celery_parameters' strict_typing, celery_worker.reload() (AttributeError before), and
    # celery_config's amqp:// broker (BrokerNotSupported: every test using celery_app erred)
    assert "3 passed" in _run_project_tests("plugin_guide_tests.py")


def test_a_conftest_that_imports_celerys_fixtures_by_name_as_django_celery_beats_does() -> None:
    # django-celery-beat's and django-celery-results' own suites import the fixtures (and Trap)
    # this way; the imported celery_app must need no fixture the conftest did not import.
    project = "tests/compat/apps/fixture_import_project"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    argv += ["-c", f"{PROJECT}/plugin_project.ini", "--rootdir", project]
    argv += [f"{project}/project_tests.py", f"{project}/trap_tests.py"]
    done = subprocess.run(argv, cwd=REPO, env=cli_env(None), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


def test_the_session_worker_runs_the_tasks_of_the_projects_own_app() -> None:
    # cookiecutter-flask-restful's test: @app.task is shared (Celery's default) with the session
    # app finalized later; its worker refused the task with NotRegistered before
    assert "3 passed" in _run_project_tests("shared_task_tests.py")
