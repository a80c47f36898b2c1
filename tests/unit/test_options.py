"""build_new_task: option validation and conversion into a NewTask."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pytest

from pgtasks.engine.errors import ConfigurationError, PayloadTooLarge, SerializationError
from pgtasks.engine.options import SendOptions, build_new_task, build_new_tasks, child_task_id
from pgtasks.engine.serialization import Codec
from pgtasks.engine.settings import validate_queue_name
from pgtasks.sysdb.records import NewTask
from tests.support.requests import enqueue_request


def build(parent_task_id: str | None = None, **options: Any) -> NewTask:
    return build_new_task(enqueue_request("tasks.add", **options), Codec(), "default", 7, parent_task_id)


def test_defaults() -> None:
    task = build(args=(1, 2), kwargs={"z": 3})
    assert task.name == "tasks.add"
    assert json.loads(task.inputs) == {"args": [1, 2], "kwargs": {"z": 3}}
    assert task.serialization == "json"
    assert task.queue_name == "default"
    assert task.priority == 0
    assert task.delay_ms is None
    assert task.delay_until_epoch_ms is None
    assert task.max_recovery_attempts == 7
    assert task.parent_task_id is None
    assert len(task.task_id) == 36
    assert build().task_id != task.task_id


def test_explicit_options_are_carried() -> None:
    task = build(
        "parent-1",
        task_id="my-id",
        queue="emails",
        priority=-5,
        deduplication_id="d1",
        partition_key="p1",
        max_recovery_attempts=0,
        application_version="v9",
    )
    assert (task.task_id, task.queue_name, task.priority) == ("my-id", "emails", -5)
    assert (task.deduplication_id, task.partition_key) == ("d1", "p1")
    assert task.max_recovery_attempts == 0
    assert task.application_version == "v9"
    assert task.parent_task_id == "parent-1"


@pytest.mark.parametrize(("countdown", "ms"), [(0, 0), (1.5, 1500), (10, 10_000), (0.0004, 0)])
def test_countdown_in_milliseconds(countdown: float, ms: int) -> None:
    assert build(countdown=countdown).delay_ms == ms


@pytest.mark.parametrize("countdown", [-1, -0.001, math.nan, math.inf, -math.inf, True, False, "10", [1]])
def test_invalid_countdown_refused(countdown: Any) -> None:
    with pytest.raises(ConfigurationError, match="countdown"):
        build(countdown=countdown)


def test_naive_eta_is_utc() -> None:
    eta = dt.datetime(2030, 5, 6, 7, 8, 9, 500000)
    expected = round(eta.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert build(eta=eta).delay_until_epoch_ms == expected == 1904281689500


def test_aware_eta_is_converted() -> None:
    eta = dt.datetime(2030, 5, 6, 9, 8, 9, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert build(eta=eta).delay_until_epoch_ms == 1904281689500


@pytest.mark.parametrize("eta", [dt.date(2030, 1, 1), "2030-01-01T00:00:00", 1904454489.5])
def test_eta_not_a_datetime_refused(eta: Any) -> None:
    with pytest.raises(ConfigurationError, match="eta must be a datetime"):
        build(eta=eta)


@pytest.mark.parametrize("priority", [-(2**31), 2**31 - 1])
def test_priority_bounds_accepted(priority: int) -> None:
    assert build(priority=priority).priority == priority


@pytest.mark.parametrize("priority", [True, 1.0, "1", None, 2**31, -(2**31) - 1])
def test_invalid_priority_refused(priority: Any) -> None:
    with pytest.raises(ConfigurationError, match="priority"):
        build(priority=priority)


@pytest.mark.parametrize("args", ["abc", {"a": 1}, 5, {1, 2}])
def test_args_must_be_list_or_tuple(args: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"args of task 'tasks\.add'"):
        build(args=args)


def test_args_list_accepted() -> None:
    assert json.loads(build(args=[1, "a"]).inputs)["args"] == [1, "a"]


@pytest.mark.parametrize("kwargs", [[("a", 1)], "a=1", None])
def test_kwargs_must_be_dict(kwargs: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"kwargs of task 'tasks\.add'"):
        build(kwargs=kwargs)


@pytest.mark.parametrize("queue", ["has space", 'quo"te', "it's", "q" * 201, "semi;colon", "ü"])
def test_invalid_queue_refused(queue: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid queue name"):
        build(queue=queue)


@pytest.mark.parametrize("queue", ["", None, 5, "a b", "q" * 201])
def test_validate_queue_name_refuses(queue: Any) -> None:
    with pytest.raises(ConfigurationError, match="invalid queue name"):
        validate_queue_name(queue)


@pytest.mark.parametrize("queue", ["a", "Q-1_x.y:z@w", "q" * 200])
def test_valid_queue_names(queue: str) -> None:
    assert build(queue=queue).queue_name == queue


def test_invalid_default_queue_refused() -> None:
    with pytest.raises(ConfigurationError, match="invalid queue name"):
        build_new_task(enqueue_request("t"), Codec(), "bad queue", 1)


def test_task_id_length() -> None:
    assert build(task_id="i" * 255).task_id == "i" * 255
    with pytest.raises(ConfigurationError, match="task_id"):
        build(task_id="i" * 256)


def test_task_id_not_string_refused() -> None:
    with pytest.raises(ConfigurationError, match="task_id"):
        build(task_id=12345)


@pytest.mark.parametrize("name", ["", None, 3])
def test_task_name_required(name: Any) -> None:
    with pytest.raises(ConfigurationError, match="task name"):
        build_new_task(enqueue_request(name), Codec(), "default", 1)


@pytest.mark.parametrize("attempts", [-1, True, 1.5, "3"])
def test_invalid_max_recovery_attempts(attempts: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_recovery_attempts"):
        build(max_recovery_attempts=attempts)


def test_unserializable_argument_names_it() -> None:
    with pytest.raises(SerializationError, match=r"keyword argument 'when' of task 'tasks\.add'"):
        build(kwargs={"when": object()})


def test_child_task_id_is_deterministic() -> None:
    first = child_task_id("parent", 1)
    assert first == child_task_id("parent", 1)
    assert first != child_task_id("parent", 2)
    assert first != child_task_id("other", 1)
    assert len(first) == 36
    # the namespace is fixed: the id must not change between releases
    assert first == "4ebeaf3e-7f0a-5687-9f0f-f57cfada957a"


def test_checked_options_are_reused_only_for_what_they_were_checked_from() -> None:
    """The checked options are cached by task and options: a cached priority=1 does not let
    priority=True through (True == 1), each task still gets its own id, arguments and parent,
    and an unhashable option is refused as before."""
    first, second = build(priority=1, args=(1,)), build(priority=1, args=(2,), parent_task_id="p")
    assert first.task_id != second.task_id and first.priority == second.priority == 1
    assert json.loads(second.inputs)["args"] == [2] and (first.parent_task_id, second.parent_task_id) == (
        None,
        "p",
    )
    with pytest.raises(ConfigurationError, match="priority must be an integer, not True"):
        build(priority=True)
    with pytest.raises(ConfigurationError, match="countdown must be a number of seconds, not True"):
        build(countdown=True)
    assert build(countdown=1).delay_ms == 1000 and build(countdown=2.5).delay_ms == 2500
    with pytest.raises(ConfigurationError, match="priority must be an integer, not \\[1\\]"):
        build(priority=[1])


@pytest.mark.parametrize(
    "options",
    [
        SendOptions(),
        SendOptions(queue="q", priority=3, countdown=2.5, expires=60.0, partition_key="k", retries=2),
        SendOptions(deduplication_id="d", max_recovery_attempts=5, eta=dt.datetime(2030, 1, 1)),
        SendOptions(expires=dt.datetime(2030, 1, 2, tzinfo=dt.timezone.utc)),
    ],
)
def test_rows_built_together_are_those_built_one_by_one_but_for_their_ids(options: SendOptions) -> None:
    arg_lists: list[Any] = [(), (1, "a"), [2], None]
    together = build_new_tasks("tasks.add", arg_lists, options, Codec(), "default", 7)
    alone = [build_new_task(options.request("tasks.add", args), Codec(), "default", 7) for args in arg_lists]
    assert [row._replace(task_id="") for row in together] == [row._replace(task_id="") for row in alone]
    assert len({row.task_id for row in together}) == len(arg_lists)


def test_rows_built_together_refuse_what_one_by_one_refuses() -> None:
    with pytest.raises(ConfigurationError, match="priority must be an integer"):
        build_new_tasks("tasks.add", [()], SendOptions(priority=True), Codec(), "default", 7)
    with pytest.raises(ConfigurationError, match="cannot share its task_id"):
        build_new_tasks("tasks.add", [(), ()], SendOptions(task_id="one"), Codec(), "default", 7)
    with pytest.raises(PayloadTooLarge, match=r"'tasks\.add'"):
        build_new_tasks(
            "tasks.add", [(1,), ("z" * 100,)], SendOptions(), Codec(), "default", 7, max_payload_bytes=50
        )


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (5, None, "args of task 'job' must be a list or tuple, not int"),
        ("ab", None, "args of task 'job' must be a list or tuple, not str"),
        (b"ab", None, "args of task 'job' must be a list or tuple, not bytes"),
        ((1,), [1], "kwargs of task 'job' must be a dict, not list"),
        (None, 5, "kwargs of task 'job' must be a dict, not int"),
    ],
)
def test_arguments_of_the_wrong_kind_are_refused_by_name(args: Any, kwargs: Any, message: str) -> None:
    with pytest.raises(TypeError, match=f"^{message}$"):
        SendOptions().request("job", args, kwargs)
    assert SendOptions().request("job", [1, 2], {"a": 1}).args == (1, 2)
    assert SendOptions().request("job", (x for x in (3,)), None).args == (3,)  # any iterable but text
