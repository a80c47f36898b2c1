"""Celery's ``report`` and ``shell`` programs, and the refusal of those pgtasks does not
provide, as real subprocesses on the embedded database."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pgtasks.cli.celery_programs import REFUSED_PROGRAMS, shell_namespace
from pgtasks.cli.main import main
from tests.compat.apps import results_app
from tests.support.cli import REPO, cli_argv, cli_env, run_pgtasks

APP = "tests.compat.apps.results_app"


def test_report_prints_versions_loader_and_masked_settings(sqlite_url: str) -> None:
    done = run_pgtasks("-A", APP, "report", url=sqlite_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("software -> celery:5.7.0 (pgtasks) pgtasks:") and " py:3." in lines[0]
    assert lines[3] == "loader   -> celery.loaders.app.AppLoader"
    assert lines[4] == "settings -> transport:sqlite results:sqlite (the pgtasks database)"
    assert "task_routes: [" in done.stdout  # the app's own settings follow


def test_python_dash_m_celery_runs_the_celery_command(sqlite_url: str) -> None:
    # Dockerfiles and supervisor configs often say `python -m celery -A proj worker`.
    def python_m_celery(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "celery", *args]
        return subprocess.run(
            argv, cwd=REPO, env=cli_env(sqlite_url), capture_output=True, text=True, timeout=120
        )

    version = python_m_celery("--version")
    assert (version.returncode, version.stdout.strip()) == (0, "5.7.0 (pgtasks)"), version.stderr
    report = python_m_celery("-A", APP, "report")
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("software -> celery:5.7.0 (pgtasks) pgtasks:")
    missing = python_m_celery("-A", "no_such_module_here", "worker")
    assert missing.returncode == 2
    assert "Unable to load celery application" in missing.stderr and "Traceback" not in missing.stderr


def test_celery_alone_prints_the_help_and_an_unknown_option_is_named(sqlite_url: str) -> None:
    """``celery`` with no command prints the help and exits 0; ``celery --bogus`` says
    ``No such option '--bogus'`` and exits 2, as Celery's (click's) command line."""

    def python_m_celery(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "celery", *args]
        return subprocess.run(
            argv, cwd=REPO, env=cli_env(sqlite_url), capture_output=True, text=True, timeout=120
        )

    for line in ((), ("-A", APP)):
        helped = python_m_celery(*line)
        assert (helped.returncode, helped.stderr) == (0, ""), helped.stderr
        assert helped.stdout.startswith("usage: pgtasks") and "worker " in helped.stdout
    for line in (("--bogus",), ("-A", APP, "--bogus=3")):
        bogus = python_m_celery(*line)
        assert bogus.returncode == 2 and bogus.stdout == ""
        assert bogus.stderr.splitlines() == [
            "usage: pgtasks [options] COMMAND ...",
            "pgtasks: error: No such option '--bogus'",
            "Try 'pgtasks --help' for help.",
        ]


def test_shell_has_the_app_its_tasks_and_the_canvas(sqlite_url: str) -> None:
    lines = (
        "print(add.name, celery is app, chain.__name__, sorted(set(dir()) & {'group', 'chord', 'Task'}))\n"
    )
    done = subprocess.run(
        cli_argv("-A", APP, "shell", "--python"),
        input=lines,
        cwd=REPO,
        env=cli_env(sqlite_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"{results_app.add.name} True chain ['Task', 'chord', 'group']" in done.stdout
    namespace = shell_namespace(results_app.app, with_tasks=False)
    assert "add" not in namespace and namespace["celery"] is results_app.app
    # In this process the app has every test module's @app.task tasks too (shared, as Celery's),
    # so its 'add' may be another module's: the shell above had the project's alone.
    shown = shell_namespace(results_app.app)["add"]
    assert shown.name.rsplit(".", 1)[-1] == "add" and shown is results_app.app.tasks[shown.name]


def test_a_missing_shell_is_named(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_pgtasks("-A", APP, "shell", "--bpython", url=sqlite_url)
    assert done.returncode == 2 and "--bpython asks for bpython, which is not installed" in done.stderr


@pytest.mark.parametrize("name", sorted(REFUSED_PROGRAMS))
def test_celery_programs_without_a_counterpart_say_why(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-A", "proj", name, "--dump", "start", "w1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pgtasks: `{name}` is not provided: ") and err.strip().endswith(
        REFUSED_PROGRAMS[name][-20:]
    )
