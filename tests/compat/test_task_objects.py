"""Task objects and options as Celery applies them, with a real `pgtasks worker`: class-based
tasks registered with ``app.register_task`` retry; task objects carry the wrapped function's
names; ``ignore_result``; a soft time limit above the hard one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.apps import replace_app as proj
from tests.support.celery_worker import celery_worker
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
