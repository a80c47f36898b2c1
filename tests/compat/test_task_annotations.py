"""``task_annotations`` as Celery applies them: attributes by task name or ``'*'`` (applied
last, so it wins), annotation objects, ``@method`` wrappers, at finalization and for tasks
registered after it; the limits they set reach the engine, and a worker runs the tasks with
them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker


class SlowTasks:
    """An annotation object: ``annotate(task)`` returns the attributes for it, or None."""

    def annotate(self, task: Any) -> Any:
        return {"soft_time_limit": 7} if task.name.startswith("ann.slow") else None


def tagged(original: Any) -> Any:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        return ("tagged", original(*args, **kwargs))

    return run


@pytest.fixture
def app(sqlite_url: str) -> Celery:
    app = Celery("annotated", broker=sqlite_url)
    app.conf.task_annotations = [
        {"ann.add": {"max_retries": 1, "time_limit": 30, "@run": tagged}, "*": {"max_retries": 9}},
        SlowTasks(),
    ]
    return app


def test_annotations_apply_at_finalization_and_after(app: Celery) -> None:
    @app.task(name="ann.add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="ann.slow_one")
    def slow_one() -> str:
        return "slow"

    assert add.max_retries == 3 and add.run(1, 2) == 3  # not finalized yet: as declared
    app.finalize()
    assert add.max_retries == 9  # '*' is applied after the named entry, as in Celery
    assert add.time_limit == 30 and add.run(1, 2) == ("tagged", 3)
    assert slow_one.soft_time_limit == 7 and slow_one.time_limit is None
    assert app.engine.registry.get("ann.add").options["time_limit"] == 30
    assert app.engine.registry.get("ann.slow_one").options["soft_time_limit"] == 7
    with pytest.raises(TypeError, match="too many positional arguments"):
        add.delay(1, 2, 3)  # the wrapper still checks the body's arguments
    assert len(app.annotations) == 2
    app.finalize()  # once: the wrapper is not wrapped again
    type(add).add_around("run", tagged)  # applied again, it wraps the original
    assert add.run(2, 2) == ("tagged", 4)

    @app.task(name="ann.late")
    def late() -> str:
        return "late"

    assert late.max_retries == 9  # registered after finalization: annotated at once
    from celery.app.annotations import MapAnnotation, prepare

    assert isinstance(prepare({"x": {}})[0], MapAnnotation) and prepare(None) == []


def test_a_worker_runs_annotated_tasks(app: Celery) -> None:
    failures: list[str] = []

    def on_failure(self: Any, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        failures.append(f"{self.name} {exc}")

    app.conf.task_annotations = {"*": {"on_failure": on_failure}, "ann.add": {"@run": tagged}}

    @app.task(name="ann.add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.task(name="ann.boom")
    def boom() -> None:
        raise LookupError("boom")

    with start_worker(app, perform_ping_check=False):
        assert add.delay(2, 3).get(timeout=30) == ["tagged", 5]
        with pytest.raises(LookupError):
            boom.delay().get(timeout=30)
    assert failures == ["ann.boom boom"]
    app.close()


NOTHING = (
    "task_annotations takes a dict of task name: attributes, an import path, an object with "
    "annotate(task), or a list of them, "
)


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (5, NOTHING + "not 5"),  # Celery ignores it
        ([{"ann.x": {}}, 5], NOTHING + "not 5"),
        ({"ann.x": 5}, "task_annotations['ann.x'] must be a dict of attributes, not 5"),  # Celery: TypeError
        ({"*": "fast"}, "task_annotations['*'] must be a dict of attributes, not 'fast'"),
    ],
    ids=["int", "in-a-list", "entry", "any-entry"],
)
def test_annotations_that_annotate_nothing_are_a_type_error_naming_the_setting(
    sqlite_url: str, annotations: Any, message: str
) -> None:
    from celery.app.annotations import BadAnnotation

    app = Celery("badly_annotated", broker=sqlite_url)
    app.conf.task_annotations = annotations
    app.task(name="ann.x")(lambda: None)
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$") as raised:
        app.finalize()
    assert isinstance(raised.value, BadAnnotation)  # a ConfigurationError: one line at the CLI
    app.close()


def test_an_entry_given_as_pairs_is_taken_as_celerys_dict_takes_it(sqlite_url: str) -> None:
    app = Celery("pairs_annotated", broker=sqlite_url)
    app.conf.task_annotations = {"ann.pairs": [("rate_limit", "3/s"), ("max_retries", 2)]}
    task = app.task(name="ann.pairs")(lambda: None)
    app.finalize()
    assert (task.rate_limit, task.max_retries) == ("3/s", 2)
    app.close()
