"""SQL injection: hostile strings in every name that reaches the database. Identifiers
(schema, channel and queue names) are refused by validation; values (task names, ids,
arguments, deduplication ids, partition keys, step and schedule names) are stored verbatim
as bound parameters. After each attempt the tables still exist and hold what they should."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from pgtasks import App, Client, ConfigurationError
from pgtasks.engine.settings import Settings
from pgtasks.sysdb.identifiers import quote_identifier
from pgtasks.sysdb.postgres import notify_channel
from pgtasks.sysdb.records import Status
from pgtasks.worker import WorkerOptions
from tests.security.support import EXPECTED_TABLES, INJECTIONS, refused, snapshot, table_names
from tests.support.inprocess import running_worker

NAME = "sec.job"
# NUL cannot be stored by PostgreSQL; pgtasks refuses it in names and ids on both dialects.
STORABLE = tuple(p for p in INJECTIONS if "\x00" not in p)
WITH_NUL = tuple(p for p in INJECTIONS if "\x00" in p)
QUEUE_ALPHABET = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:@")
SNEAKY_IDENTIFIERS = (*INJECTIONS, "pgtasks\n", "PGTASKS", "1abc", "a-b", "a b", "s" * 64, "é", "")


def test_hostile_identifiers_are_refused_by_validation() -> None:
    for name in SNEAKY_IDENTIFIERS:
        with pytest.raises(ConfigurationError, match="schema name"):
            quote_identifier(name, "schema name")
    for name in INJECTIONS:  # the channel is derived from the (validated) schema name
        with pytest.raises(ConfigurationError, match="channel name"):
            notify_channel(name)


@pytest.mark.parametrize("dialect_url", ["postgresql://u@127.0.0.1:1/db", "sqlite:///never-opened.sqlite3"])
def test_hostile_schema_names_are_refused_before_connecting(dialect_url: str) -> None:
    for schema in SNEAKY_IDENTIFIERS:
        with pytest.raises(ConfigurationError, match="schema name"):
            App("sec", database_url=dialect_url, schema=schema)
        with pytest.raises(ConfigurationError, match="schema name"):
            Client(dialect_url, schema=schema)
        with pytest.raises(ConfigurationError, match="schema name"):
            Settings(database_url=dialect_url, schema=schema)
        if dialect_url.startswith("postgresql") and schema:  # "?schema=" is no schema at all
            with pytest.raises(ConfigurationError, match="schema name"):
                App("sec", database_url=f"{dialect_url}?schema={quote(schema)}")


def test_hostile_queue_names_are_refused_everywhere(app: App, database_url: str) -> None:
    kept = [app.send_task(NAME, [1]).id]
    tables = table_names(database_url)
    assert tables >= EXPECTED_TABLES
    for queue in INJECTIONS:
        if set(queue) <= QUEUE_ALPHABET:  # "--", ":name": harmless names, stored as values
            kept.append(app.send_task(NAME, queue=queue).id)
            assert [r.task_id for r in app.list_tasks(queue=queue)] == [kept[-1]]
            continue
        refused(app, lambda q=queue: app.send_task(NAME, queue=q), "queue name")
        with pytest.raises(ConfigurationError, match="queue name"):
            app.queue(queue, concurrency=1)
        with pytest.raises(ConfigurationError, match="queue name"):
            WorkerOptions(queues=(queue,))
        with pytest.raises(ConfigurationError, match="queue name"):
            App("sec", database_url=database_url, default_queue=queue)
        with pytest.raises(ConfigurationError, match="queue name"):
            app.schedule("s", NAME, "* * * * *", queue=queue)
        if "\x00" not in queue:  # a filter is a bound value: it matches nothing
            assert app.list_tasks(queue=queue) == []
    assert table_names(database_url) == tables
    assert sorted(snapshot(app)) == sorted(kept)
    assert app.engine.admin.queues() == []


def test_hostile_values_are_stored_verbatim(app: App, database_url: str) -> None:
    tables = table_names(database_url)
    sent: dict[str, str] = {}
    for i, value in enumerate(STORABLE):
        task_id = f"{i}{value}"
        got = app.send_task(
            value,
            [value, {value: value}],
            {"k": value},
            task_id=task_id,
            deduplication_id=value,
            partition_key=value,
        ).id
        assert got == task_id
        sent[task_id] = value
    rows = snapshot(app)
    assert set(rows) == set(sent)
    for task_id, value in sent.items():
        row = rows[task_id]
        assert (row.name, row.deduplication_id, row.partition_key) == (value, value, value)
        args, kwargs = app.engine.codec.loads_inputs(row.serialization, row.inputs, row.name)
        assert (args, kwargs) == ([value, {value: value}], {"k": value})
        assert [r.task_id for r in app.list_tasks(name=value)] == [task_id]
        assert app.get_task(value) is None  # an id is looked up as a value, never as SQL
        assert app.cancel_task(value) is False
        assert app.resume_task(value) is False
        with pytest.raises(ConfigurationError, match="no task with id"):
            app.fork_task(value)
    assert table_names(database_url) == tables
    assert snapshot(app) == rows


def test_nul_is_refused_in_every_stored_name(app: App) -> None:
    for value in WITH_NUL:
        refused(app, lambda v=value: app.send_task(v), "NUL")
        refused(app, lambda v=value: app.send_task(NAME, task_id=v), "NUL")
        refused(app, lambda v=value: app.send_task(NAME, deduplication_id=v), "NUL")
        refused(app, lambda v=value: app.send_task(NAME, partition_key=v), "NUL")
        # Inside the arguments NUL is just a character of a JSON string.
        task_id = app.send_task(NAME, [value], {"k\x00": value}).id
        record = app.engine.get_task(task_id)
        assert record is not None
        assert app.engine.codec.loads_inputs("json", record.inputs, NAME) == ([value], {"k\x00": value})


def test_hostile_step_names_and_results_are_stored_verbatim(app: App, database_url: str) -> None:
    tables = table_names(database_url)
    steps: list[Any] = []
    for value in STORABLE:

        @app.step(name=value)
        def echo(x: str) -> str:
            return x

        steps.append(echo)

    @app.task(name="sec.steps")
    def run_steps(values: list[str]) -> list[str]:
        return [step(v) for step, v in zip(steps, values, strict=True)]

    with running_worker(app, executor_id="w-injection"):
        result = run_steps.delay(list(STORABLE))
        assert result.get(timeout=30) == list(STORABLE)
    recorded = app.engine.admin.steps(result.id)
    assert [s.function_name for s in recorded] == list(STORABLE)
    assert [app.engine.codec.loads("json", s.output) for s in recorded] == list(STORABLE)
    assert app.engine.get_task(result.id).status is Status.SUCCESS  # type: ignore[union-attr]
    assert table_names(database_url) == tables


def test_hostile_schedule_names_and_arguments_are_stored_verbatim(app: App, database_url: str) -> None:
    tables = table_names(database_url)
    names = [v for v in STORABLE if v.strip()]
    for value in names:
        stored = app.schedule(value, value, "*/5 * * * *", args=[value], kwargs={value: value})
        assert stored.name == value and stored.task_name == value
        assert app.get_schedule(value).context == stored.context
        with pytest.raises(ConfigurationError, match="timezone"):
            app.schedule(value, NAME, "* * * * *", timezone=value)
        with pytest.raises(ConfigurationError, match="cron expression"):
            app.schedule(value, NAME, value)
    assert sorted(s.name for s in app.schedules_list()) == sorted(names)
    for value in WITH_NUL:
        with pytest.raises(ConfigurationError, match="control characters"):
            app.schedule(value, NAME, "* * * * *")
    for value in set(STORABLE) - set(names):  # only white space
        with pytest.raises(ConfigurationError, match="non-empty"):
            app.schedule(value, NAME, "* * * * *")
    for value in names:
        assert app.delete_schedule(value) is True
    assert app.schedules_list() == []
    assert table_names(database_url) == tables
