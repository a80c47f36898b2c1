"""Conformance of the system database, on PostgreSQL and SQLite: events a running task
publishes, and the revocations that ask its worker to stop it."""

from __future__ import annotations

from pgtasks.sysdb import SystemDatabase
from tests.integration.sysdb.support import claim, new


def test_an_event_keeps_the_last_value_published_under_its_key(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a")])
    assert sysdb.task_event_get("a", "state") is None
    assert sysdb.task_event_set("a", "state", '{"p": 1}', "json")
    assert sysdb.task_event_set("a", "state", '{"p": 2}', "json")
    assert sysdb.task_event_get("a", "state") == ("json", '{"p": 2}')
    assert sysdb.task_event_get("a", "other") is None
    assert not sysdb.task_event_set("missing", "state", "1", "json")
    assert sysdb.task_event_get("missing", "state") is None


def test_only_cancelled_tasks_with_a_terminate_event_are_to_terminate(sysdb: SystemDatabase) -> None:
    sysdb.tasks_enqueue([new("a"), new("b"), new("c")])
    assert claim(sysdb) == ["a", "b", "c"]
    assert sysdb.tasks_to_terminate(["a", "b", "c"]) == []
    assert sysdb.task_event_set("a", "terminate", "true", "json") and sysdb.task_cancel("a")
    assert sysdb.task_cancel("b")  # cancelled, but not to be terminated
    assert sysdb.task_event_set("c", "terminate", "true", "json")  # still running: not cancelled
    assert sysdb.tasks_to_terminate(["c", "b", "a"]) == ["a"]
    assert sysdb.tasks_to_terminate([]) == []
