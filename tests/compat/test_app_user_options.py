"""Options a Celery app adds to the command line (``app.user_options``, click ``Option``s):
``pgtasks`` takes them after its own, sends the preload values to ``user_preload_options``,
and still refuses an option nobody defines."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pgtasks.cli.app_options import take_app_options
from tests.support.cli import run_pgtasks
from tests.support.ledger import lines_of

APP = "tests.compat.apps.options_app"


def test_preload_options_reach_the_signal(sqlite_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    env = {"PGTASKS_TEST_LEDGER": str(ledger)}
    done = run_pgtasks("-A", APP, "status", "-Z", "nightly", url=sqlite_url, env=env)
    assert done.returncode == 69, done.stderr  # no live worker: status says so (Celery's 69), no parse error
    assert "unrecognized" not in done.stderr and lines_of(ledger) == ["preload nightly"]


def test_worker_options_are_parsed_onto_the_command(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGTASKS_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("PGTASKS_TEST_LEDGER", str(tmp_path / "ledger"))
    args = argparse.Namespace(app=APP, command="worker")
    errors: list[str] = []
    take_app_options(args, ["--enable-my-option", "--template", "t"], errors.append)
    assert errors == [] and args.enable_my_option is True and args.template == "t"
    beat = argparse.Namespace(app=APP, command="beat")
    take_app_options(beat, ["--enable-my-option"], errors.append)  # a worker option, not beat's
    assert errors == ["unrecognized arguments: --enable-my-option"]
    take_app_options(argparse.Namespace(app=APP, command="status"), [], errors.append)
    assert lines_of(tmp_path / "ledger") == ["preload t", "preload default", "preload default"]
