"""Task objects and options as Celery applies them, with a real `pgtasks worker`: class-based
tasks registered with ``app.register_task`` retry; task objects carry the wrapped function's
names; ``ignore_result``; a soft time limit above the hard one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.apps import replace_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.cli import REPO, cli_env
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.replace_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "objects-w1", concurrency=2):
        yield path


def test_a_class_based_task_retries(ledger: Path) -> None:
    result = proj.flaky.delay(2)
    assert result.get(timeout=60) == 2 and result.retries == 2
    with pytest.raises(ValueError, match="not yet"):
        proj.flaky.delay(5).get(timeout=60)  # more than max_retries (3): the reason is raised
    auto = proj.auto_flaky.delay(2)  # registered as a class: autoretry_for still applies
    assert auto.get(timeout=60) == 2 and auto.retries == 2


def test_ignore_result_makes_get_return_none(ledger: Path) -> None:
    assert proj.quiet.delay(7).get(timeout=60) is None  # as Celery: nothing to wait for
    wait_for(lambda: "quiet 7" in lines(ledger), timeout=60, what="the quiet task to run")
    assert proj.add.apply_async((1, 2), ignore_result=True).get(timeout=60) is None
    assert proj.add.apply_async((1, 2), ignore_result=False).get(timeout=60) == 3


def test_time_limits_a_task_is_sent_with(ledger: Path) -> None:
    with pytest.raises(ValueError, match="soft_time_limit must be less than or equal to time_limit"):
        proj.soft_above_hard.delay()
    assert proj.limits_seen.delay().get(timeout=60) == {"time_limit": 60, "soft_time_limit": 45}
    per_call = proj.limits_seen.apply_async(time_limit=30, soft_time_limit=20)
    assert per_call.get(timeout=60) == {"time_limit": 30, "soft_time_limit": 20}


def test_task_objects_look_like_their_functions() -> None:
    add = proj.add
    assert (add.__name__, add.__qualname__, add.__module__) == ("add", "add", proj.__name__)
    assert add.__wrapped__(2, 3) == 5 and add.__doc__ == proj.add.run.__doc__
    assert proj.replace_with.__doc__ and "Replaced by" in proj.replace_with.__doc__
    assert (proj.flaky.__name__, proj.flaky.__qualname__) == ("Flaky", "Flaky")


def test_a_task_pickles_as_its_name_and_another_process_gets_its_own_task(tmp_path: Path) -> None:
    # As Celery's: a task (a bound .delay handed to a process pool, a pickle-serialized
    # argument) pickles as its name and module; pgtasks' per-function task class did not
    # pickle at all (PicklingError: not the same object as results_app.add)
    env = cli_env(f"sqlite:///{tmp_path / 'pickle.sqlite3'}")
    dumped = subprocess.run(
        [sys.executable, "-c", PICKLE_ADD], cwd=REPO, env=env, capture_output=True, timeout=60, check=True
    ).stdout
    loaded = subprocess.run(
        [sys.executable, "-c", UNPICKLE], input=dumped, cwd=REPO, env=env, capture_output=True, timeout=60
    )
    assert loaded.stdout.decode().strip() == "tests.compat.apps.results_app.add True", loaded.stderr.decode()


PICKLE_ADD = (
    "import pickle, sys; from tests.compat.apps import results_app as p; "
    "sys.stdout.buffer.write(pickle.dumps(p.add))"
)
UNPICKLE = (
    "import pickle, sys; task = pickle.loads(sys.stdin.buffer.read()); "
    "from tests.compat.apps import results_app as p; print(task.name, task is p.add)"
)
