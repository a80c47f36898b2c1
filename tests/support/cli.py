"""Running the `pgtasks` command line as a real subprocess of the tests, from the repository
root, with the test's database URL and any extra environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]


def cli_env(url: str | None = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with ``PGTASKS_DATABASE_URL=url`` when given, then ``env``."""
    database = {"PGTASKS_DATABASE_URL": url} if url is not None else {}
    return {**os.environ, **database, **(env or {})}


def cli_argv(*args: str) -> list[str]:
    """``python -m pgtasks <args>`` with the interpreter running the tests."""
    return [sys.executable, "-m", "pgtasks", *args]


def run_pgtasks(
    *args: str,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `pgtasks <args>` to its end and return its exit code, stdout and stderr."""
    return subprocess.run(
        cli_argv(*args),
        cwd=REPO,
        env=cli_env(url, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def spawn_pgtasks(*args: str, env: Mapping[str, str], output: Path | None = None) -> subprocess.Popen[str]:
    """Start `pgtasks <args>` with exactly the environment ``env`` (see :func:`cli_env`); its
    stdout and stderr go to a pipe (read it with ``communicate``), or are appended to the file
    ``output`` to be watched while it runs."""
    if output is None:
        return _popen(args, env, subprocess.PIPE)
    with output.open("a") as sink:  # the child keeps its own descriptor
        return _popen(args, env, sink)


def _popen(args: tuple[str, ...], env: Mapping[str, str], stdout: int | IO[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cli_argv(*args), cwd=REPO, env=dict(env), stdout=stdout, stderr=subprocess.STDOUT, text=True
    )
