"""One send-options type behind every sending path: an unknown option is refused by name on
each of them, and the bulk path honours every option the single path does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pgtasks import App, Client
from pgtasks.compat import Celery
from pgtasks.engine.errors import ConfigurationError, DuplicateTaskError
from pgtasks.engine.options import SEND_OPTION_NAMES, SendOptions
from pgtasks.sysdb.records import Status, TaskRecord

UTC = dt.timezone.utc


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    application = App("opts", database_url=database_url)
    application.queue("tenants", partitioned=True, concurrency=1)
    yield application
    application.close()


@pytest.fixture
def celery(database_url: str) -> Iterator[Celery]:
    application = Celery("opts", broker=database_url)
    yield application
    application.close()


def record(app: App, task_id: str) -> TaskRecord:
    found = app.engine.get_task(task_id)
    assert found is not None
    return found


def test_from_kwargs_refuses_an_unknown_option_naming_it_and_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as refused:
        SendOptions.from_kwargs(countdown=1, contdown=2)
    message = str(refused.value)
    assert "unknown send option 'contdown'" in message
    assert all(name in message for name in SEND_OPTION_NAMES)
    with pytest.raises(ConfigurationError, match="on_duplicate must be 'raise' or 'return'"):
        SendOptions.from_kwargs(on_duplicate="ignore")
    assert SendOptions.from_kwargs(queue="q", priority=3) == SendOptions(queue="q", priority=3)


def test_every_sending_path_refuses_an_unknown_option(app: App, celery: Celery, database_url: str) -> None:
    job = app.task(name="opts.job")(lambda x=0: x)
    compat_job = celery.task(name="opts.compat_job")(lambda x=0: x)
    client = Client(database_url)
    paths: dict[str, Callable[[], Any]] = {
        "Task.apply_async": lambda: job.apply_async((1,), prority=1),
        "App.send_task": lambda: app.send_task("opts.job", (1,), prority=1),
        "App.enqueue": lambda: app.enqueue("opts.job", (1,), prority=1),
        "Client.enqueue": lambda: client.enqueue("opts.job", (1,), prority=1),
        "Task.map_enqueue": lambda: job.map_enqueue([(1,), (2,)], prority=1),
        "compat Task.apply_async": lambda: compat_job.apply_async((1,), prority=1),
        "compat Celery.send_task": lambda: celery.send_task("opts.compat_job", (1,), prority=1),
        "compat Signature.apply_async": lambda: compat_job.s(1).apply_async(prority=1),
    }
    try:
        for path, send in paths.items():
            with pytest.raises(ConfigurationError, match="unknown send option 'prority'"):
                send()
                pytest.fail(f"{path} accepted an unknown option")
    finally:
        client.close()
    assert job.delay(1).id and compat_job.delay(1).id  # delay takes task arguments, not options


def test_celery_options_are_consumed_before_the_send_options(celery: Celery) -> None:
    compat_job = celery.task(name="opts.routed")(lambda: None)
    sent = compat_job.apply_async(
        routing_key="x", exchange="y", serializer="json", retry=True, deduplication_id="d1", countdown=60
    )
    stored = record(celery, sent.id)
    assert stored.deduplication_id == "d1" and stored.status is Status.DELAYED


def test_the_bulk_path_honours_eta_expires_deduplication_and_partition(app: App) -> None:
    job = app.task(name="opts.bulk")(lambda x: x)
    eta = dt.datetime(2100, 1, 1, tzinfo=UTC)
    delayed = job.map_enqueue([(1,), (2,)], eta=eta, expires=3600.0, queue="tenants", partition_key="acme")
    for handle in delayed:
        stored = record(app, handle.id)
        assert stored.status is Status.DELAYED
        assert stored.delay_until_epoch_ms == int(eta.timestamp() * 1000)
        assert stored.expires_at_epoch_ms is not None
        assert stored.partition_key == "acme" and stored.queue_name == "tenants"
    expiring_at = dt.datetime(2099, 6, 1, tzinfo=UTC)
    [at_datetime] = job.map_enqueue([(3,)], expires=expiring_at)
    assert record(app, at_datetime.id).expires_at_epoch_ms == int(expiring_at.timestamp() * 1000)
    [held] = job.map_enqueue([(4,)], deduplication_id="once", countdown=3600)
    assert record(app, held.id).deduplication_id == "once"
    with pytest.raises(DuplicateTaskError):
        job.map_enqueue([(5,)], deduplication_id="once")
    [holder] = job.map_enqueue([(6,)], deduplication_id="once", on_duplicate="return")
    assert holder.id == held.id
    with pytest.raises(ValueError, match=r"task_ids=\[\.\.\.\], one per task"):
        job.map_enqueue([(7,)], task_id="x")


def test_a_dict_shaped_like_a_codec_tag_is_stored_escaped_through_the_celery_layer(celery: Celery) -> None:
    """Issue 25, item 5: sent with Celery's delay(), such a dict reads back unchanged."""

    @celery.task(name="opts.echo_tag")
    def echo(value: object) -> object:
        return value

    shaped = {"__type__": "bytes", "__value__": "aGk="}
    sent = echo.delay(shaped)
    record = celery.engine.get_task(sent.id)
    assert record is not None
    assert celery.engine.codec.loads_inputs(record.serialization, record.inputs, "x") == ([shaped], {})


def test_countdown_and_eta_together_are_refused_natively_and_the_countdown_wins_in_celery(
    app: App, celery: Celery
) -> None:
    """Natively the eta won without a word (Celery's countdown wins: the compat layer keeps that)."""
    eta = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=5)
    with pytest.raises(ConfigurationError, match=r"^countdown=10 and eta=datetime.* both given: give one"):
        app.enqueue("opts.job", countdown=10, eta=eta)
    assert app.list_tasks(name="opts.job") == []
    sent = celery.send_task("opts.job", countdown=10, eta=eta)
    waits = celery.engine.get_task(sent.id).delay_until_epoch_ms / 1000 - dt.datetime.now().timestamp()
    assert 0 < waits <= 10
