"""Celery's pytest plugin (``celery.contrib.pytest``) and ``start_worker``: a project's test
module, written against Celery's documented fixtures, run by a pytest of its own."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import REPO, cli_env

PROJECT = "tests/compat/apps/plugin_project"


def test_a_projects_tests_written_with_celerys_fixtures_pass() -> None:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    argv += ["-p", "celery.contrib.pytest", "-c", f"{PROJECT}/plugin_project.ini", "--rootdir", PROJECT]
    argv += [f"{PROJECT}/plugin_project_tests.py"]
    done = subprocess.run(argv, cwd=REPO, env=cli_env(None), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout
