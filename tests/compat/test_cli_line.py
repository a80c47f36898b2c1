"""What Celery's global options do, and where the Celery layer comes from, as real processes:
``--workdir`` and ``-b`` act before the app is loaded; a Celery app gets pgtasks' Celery layer
even where a real celery is installed too; a pgtasks App's command never installs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pgtasks import Client
from tests.support.cli import REPO, cli_argv

PROJECT = """
from celery import Celery

app = Celery("line")  # no broker_url: the command line's -b gives it


@app.task(name="line.add")
def add(x, y):
    return x + y
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PGTASKS_DATABASE_URL", "CELERY_BROKER_URL")}
    return {**env, **extra}


def test_workdir_and_broker_act_before_the_app_is_loaded(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "line_proj.py").write_text(PROJECT)
    # A stand-in for a real celery installed beside pgtasks: found first on the path.
    real = tmp_path / "site" / "celery"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    url = f"sqlite:///{tmp_path / 'line.sqlite3'}"
    line = (
        "--workdir",
        str(project),
        "-A",
        "line_proj",
        "call",
        "line.add",
        "-b",
        url,
        "--args=[2, 3]",
        "-q",
    )
    done = subprocess.run(
        cli_argv(*line),
        cwd=REPO,  # the project is found through --workdir only
        env=_env(PYTHONPATH=str(tmp_path / "site")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "pgtasks: warning: ignoring Celery option -q (pgtasks has no use for it)\n"
    client = Client(url)
    try:
        sent = client.engine.get_task(done.stdout.strip())
        assert sent is not None and sent.name == "line.add"  # in the database -b named
    finally:
        client.close()


def test_a_pgtasks_apps_command_never_installs_the_celery_layer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'native.sqlite3'}"
    code = (
        "import sys\n"
        "from pgtasks.cli.main import main\n"
        "status = main(sys.argv[1:])\n"
        "print(status, 'celery' in sys.modules)\n"
    )
    for app, command, layer in (
        ("tests.acceptance.apps.board_app", ("tasks", "list"), "False"),
        ("tests.compat.apps.signals_app", ("celery-check",), "True"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, "-A", app, *command],
            cwd=REPO,
            env=_env(PGTASKS_DATABASE_URL=url),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.splitlines()[-1] == f"0 {layer}", (app, done.stdout, done.stderr)


def test_an_app_of_another_name_in_the_packages_celery_module_is_found(tmp_path: Path) -> None:
    """``-A pkg`` where ``pkg/__init__.py`` is empty and ``pkg/celery.py`` says ``myapp =
    Celery(...)``: Celery's find_app takes it, and so does pgtasks; a package whose modules
    import celery but define no app says "no Celery app"."""
    project = tmp_path / "project"
    named = PROJECT.replace('app = Celery("line")', 'myapp = Celery("line")').replace("@app.", "@myapp.")
    for package, body in (("named_proj", named), ("appless_proj", "import celery\n")):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text("")
        (project / package / "celery.py").write_text(body)
    url = f"sqlite:///{tmp_path / 'line.sqlite3'}"
    base = ("--workdir", str(project), "-b", url)

    def run(*line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            cli_argv(*base, *line), cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120
        )

    sent = run("-A", "named_proj", "call", "line.add", "--args=[2, 3]")
    assert sent.returncode == 0, sent.stderr
    client = Client(url)
    try:
        task = client.engine.get_task(sent.stdout.strip())
        assert task is not None and task.name == "line.add"
    finally:
        client.close()
    appless = run("-A", "appless_proj", "call", "line.add")
    assert appless.returncode == 2 and appless.stderr.startswith(
        "pgtasks: error: -A appless_proj: Unable to load celery application: module 'appless_proj' "
        "defines no Celery app"
    ), appless.stderr
