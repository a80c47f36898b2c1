"""Entries of Celery's "Tasks" and "Calling Tasks" guides on a real `pgtasks worker`
(prefork), where pgtasks did otherwise than the real Celery 5.5.3 on Redis (a prefork and a
threads worker were probed with the same tasks):

- a ``Retry`` the body raises itself (``raise Retry()``, not ``raise self.retry()``): Celery
  records RETRY and never runs the task again (``Task.retry`` is what sends the next run);
  pgtasks re-ran it at once, forever, with no ``max_retries`` to stop it;
- ``countdown`` or ``expires`` below zero (``(deadline - now).total_seconds()`` once the
  deadline passed): Celery sends the task, which runs at once or is expired unrun; pgtasks
  refused the send with ConfigurationError;
- a task killed at its hard time limit (prefork): Celery's main process calls its errbacks
  that take the request, sends ``task_failure`` and ``task_postrun`` (state None); pgtasks
  did none of them, the child that would have being dead;
- ``self.request.argsrepr`` / ``kwargsrepr`` in a worker: Celery's message always carries them
  (the arguments' repr unless ``apply_async`` was given its own); pgtasks' were None; and
  ``celery.utils.saferepr`` cut lists at 6 items and sorted dicts;
- a shadow name (``apply_async(shadow=...)``, a task's ``shadow_name``): Celery shows it in
  its worker's task lines and ``request.shadow``; pgtasks ignored it;
- ``self.retry(queue=..., priority=...)``: Celery sends the retry with those options; pgtasks
  ran the same row again where it was (now it moves the row there; the options it does not
  apply, such as limits, are named in the worker's log);
- ``update_state()`` without a ``task_id`` where no task of it runs (called directly):
  Celery raises ValueError (no id to store it for); pgtasks kept it silently;
- ``apply()`` of a task that raises ``Ignore``: Celery's EagerResult holds the Ignore as its
  result; pgtasks' held None."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.exceptions import Ignore, Reject, Retry, TaskRevokedError, TimeLimitExceeded
from celery.utils.saferepr import saferepr

from pgtasks.dashboard.flower_tasks import TaskView
from pgtasks.task_info import TaskInfo
from pgtasks.worker_reports import request_info
from tests.compat.apps import task_guide_app as proj
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of

MODULE = "tests.compat.apps.task_guide_app"


@pytest.fixture
def ledger(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    log = tmp_path / "worker.log"  # beside the ledger: read by a test while the worker runs
    with celery_worker(
        proj.app,
        MODULE,
        pg_url,
        tmp_path / "ledger",
        monkeypatch,
        "guide-w",
        pool="prefork",
        output=log,
        extra_args=("-Q", "celery,elsewhere"),
    ) as path:
        yield path


def _noted(ledger: Path, kind: str, task_id: str) -> int:
    return sum(1 for line in lines_of(ledger) if line.split()[:2] == [kind, task_id])


def test_a_retry_the_body_raises_itself_runs_once(ledger: Path) -> None:
    """As on Celery, the task runs once and its ``on_retry`` and ``task_retry`` once; it is
    not run again. Its row must end: FAILURE, with the Retry as its error (Celery: RETRY for
    ever), and no ``on_failure`` (Celery calls none). ``raise self.retry()`` still retries."""
    by_hand, retried = proj.raises_retry.delay(), proj.retries_once.delay()
    assert retried.get(timeout=60) == "retried"
    with pytest.raises(Retry, match="asked by hand"):
        by_hand.get(timeout=60)
    assert proj.app.AsyncResult(by_hand.id).state == "FAILURE"
    assert "Retry: asked by hand" in proj.app.AsyncResult(by_hand.id).traceback
    # the retry that was sent ran once more; the one raised by hand, only once
    assert _noted(ledger, "run", retried.id) == 2 and _noted(ledger, "on_retry", retried.id) == 1
    assert [_noted(ledger, kind, by_hand.id) for kind in ("run", "on_retry", "task_retry", "on_failure")] == [
        1,
        1,
        1,
        0,
    ]


def test_a_countdown_or_expires_below_zero_means_now(ledger: Path) -> None:
    """As Celery: a countdown below zero runs the task at once; an ``expires`` below zero
    seconds has passed, so the task is revoked unrun (as a past ``expires`` datetime)."""
    late = proj.echo.apply_async(("late",), countdown=-5)
    assert late.get(timeout=60) == "late"
    assert proj.echo.apply_async(("later",), countdown=-0.5, expires=60).get(timeout=60) == "later"
    gone = proj.echo.apply_async(("gone",), expires=-5)
    wait_for(lambda: gone.state == "REVOKED", timeout=60, what="the expired task to be revoked")
    with pytest.raises(TaskRevokedError):
        gone.get(timeout=10)
    assert "echo gone" not in lines_of(ledger)


def test_a_task_killed_at_its_hard_time_limit_fails_as_on_celery(ledger: Path) -> None:
    """Its errback that takes the request runs once (Celery 5.5 calls it twice: as the limit
    passes and as the pool reports the kill), ``task_failure`` is sent once with
    TimeLimitExceeded and ``task_postrun`` with state None; no ``on_failure``, as on Celery."""
    killed = proj.overruns.apply_async(link_error=proj.errback.s())
    with pytest.raises(TimeLimitExceeded):
        killed.get(timeout=60)
    noted = (line.split() for line in lines_of(ledger))
    seen = sorted((kind, *rest) for kind, task_id, *rest in noted if task_id == killed.id)
    expected = [("errback", "TimeLimitExceeded"), ("run",), ("task_failure", "TimeLimitExceeded")]
    assert seen == [*expected, ("task_postrun", "None")]


def test_apply_of_an_ignored_task_holds_the_ignore() -> None:
    """As Celery's: state IGNORED, the Ignore raised as the result (no worker involved)."""
    applied = proj.ignored.apply()
    assert applied.state == "IGNORED" and isinstance(applied.result, Ignore)
    assert applied.get() is None  # get() gives no value for an ignored task, as Celery's


def test_the_request_shows_the_arguments_repr(ledger: Path) -> None:
    """As Celery's message: the repr of the arguments, unless apply_async was given one."""
    assert proj.shows_reprs.delay(1, "a", b=2).get(timeout=60) == ["(1, 'a')", "{'b': 2}"]
    hidden = proj.shows_reprs.apply_async((1,), {"b": 2}, argsrepr="(<hidden>,)")
    assert hidden.get(timeout=60) == ["(<hidden>,)", "{'b': 2}"]
    secret = proj.shows_reprs.apply_async(("s3cret",), {"token": "t"}, argsrepr="", kwargsrepr="")
    assert secret.get(timeout=60) == ["", ""]  # an empty repr hides them, as Celery keeps it
    # one of them given, empty: Flower's task and inspect's safe view keep it hidden too
    half = proj.shows_reprs.apply_async(("s3cret",), {"b": 2}, argsrepr="")
    assert half.get(timeout=60) == ["", "{'b': 2}"]
    info = TaskInfo.of(proj.app.engine.get_task(half.id))
    assert TaskView((), lambda task: task.inputs).arguments(info) == ("", "{'b': 2}")
    assert request_info(info, (["s3cret"], {"b": 2}), "w", None, True, reprs=True)["args"] == ""
    many = proj.shows_reprs.delay(*range(8), z=1, a=2, y=3, b=4, x=5)
    assert many.get(timeout=60) == ["(0, 1, 2, 3, 4, 5, 6, 7)", "{'z': 1, 'a': 2, 'y': 3, 'b': 4, 'x': 5}"]


def test_saferepr_shows_what_celerys_shows() -> None:
    """Every item, dicts in their order, nesting cut at 3 levels, the whole within maxlen
    (as the real Celery 5.5.3 printed them); it showed 6 list items and 4 sorted dict keys."""
    assert saferepr(list(range(10))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
    assert saferepr({"token": "t", "k": 3}, 1024) == "{'token': 't', 'k': 3}"
    assert saferepr({"a": [1, [2, [3, [4]]]]}) == "{'a': [1, [2, [...]]]}"
    assert saferepr((1,), 1024) == "(1,)" and saferepr(b"bytes") == "b'bytes'"
    assert len(saferepr(list(range(10_000)), maxlen=50)) <= 53


def test_update_state_needs_an_id_outside_a_running_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """As Celery's: called directly (or outside any task) there is no id to store it for;
    without a ``result_backend`` (Celery's disabled backend) that is no error, so that a
    project's unit test may call a task that reports progress."""
    assert proj.reports_progress() == "reported"
    monkeypatch.setitem(proj.app.conf, "result_backend", "redis://localhost/0")
    with pytest.raises(ValueError, match="needs a task_id"):
        proj.reports_progress()
    with pytest.raises(ValueError, match="needs a task_id"):
        proj.reports_progress.update_state(state="PROGRESS", meta={"done": 1})
    assert proj.reports_progress.apply().get() == "reported"  # eagerly it has its id


def test_a_shadow_name_is_what_the_worker_shows(ledger: Path) -> None:
    """As Celery: the request's ``shadow`` and the worker's received and succeeded lines
    name the task by it (given to apply_async, or by the task's ``shadow_name``)."""
    given = proj.shows_shadow.apply_async(shadow="reports.daily")
    assert given.get(timeout=60) == "reports.daily"
    named = proj.shadowed_by_argument.delay("weekly")
    assert named.get(timeout=60) == "shadowed.weekly"
    assert proj.shows_shadow.delay().get(timeout=60) is None  # none given: None, as in Celery
    log = (ledger.parent / "worker.log").read_text()
    for name, sent in (("reports.daily", given), ("shadowed.weekly", named)):
        assert f"Task {name}[{sent.id}] received" in log
        assert f"Task {name}[{sent.id}] succeeded in" in log


def test_a_retry_runs_on_the_queue_and_priority_it_asks_for(ledger: Path) -> None:
    """As Celery sends the retry with them: the next run is on that queue with that priority
    (the worker consumes both queues); the options pgtasks does not apply are named in the
    worker's log."""
    sent = proj.retries_elsewhere.delay()
    assert sent.get(timeout=60) == ["elsewhere", 7]
    assert sent.queue == "elsewhere"
    log = (ledger.parent / "worker.log").read_text()
    assert f"task {sent.id}: self.retry(time_limit=...) is not applied by pgtasks" in log
    assert "queue=..." not in log


def test_a_retry_to_a_queue_no_name_can_be_fails_saying_why(ledger: Path) -> None:
    """As Celery's ``retry()``, whose send of the retry fails: the task is rejected for good
    (a FAILURE here, with ``task_failure``), and no retry was made, so no ``on_retry`` nor
    ``task_retry`` (they ran, and the task then failed, which a handler counting retries or
    a mirror of the RETRY state got wrong)."""
    sent = proj.retries_to_a_bad_queue.delay()
    with pytest.raises(Reject, match=r"invalid queue name \\'no such queue"):
        sent.get(timeout=60)
    assert sent.state == "FAILURE"
    assert "ConfigurationError: invalid queue name 'no such queue'" in sent.traceback
    kinds = ("run", "on_retry", "task_retry", "task_failure", "on_failure")
    assert [_noted(ledger, kind, sent.id) for kind in kinds] == [1, 0, 0, 1, 0]
    priority = proj.retries_with_a_bad_priority.delay()  # the same for a priority refused
    with pytest.raises(Reject, match="priority must be an integer"):
        priority.get(timeout=60)
    assert [_noted(ledger, kind, priority.id) for kind in kinds] == [1, 0, 0, 1, 0]
