"""Conformance of the system database, on PostgreSQL and SQLite: enqueue notifications (a
listener on PostgreSQL; none on SQLite, whose workers poll) and closing."""

from __future__ import annotations

import pytest

from pgtasks.sysdb import SystemDatabase, open_system_database
from pgtasks.sysdb.records import QueuePause
from tests.integration.sysdb.support import new


def test_a_listener_hears_the_queues_of_committed_enqueues(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_listener()
    if sysdb.target.dialect == "sqlite":
        assert listener is None
        return
    assert listener is not None
    try:
        sysdb.tasks_enqueue([new("a", queue="mail")])
        heard: set[str] = set()
        while "mail" not in heard:  # wait() blocks until a notification arrives (or 30 s pass)
            got = listener.wait(timeout=30)
            assert got, "no notification within 30 s"
            heard |= got
    finally:
        listener.close()


def test_announcing_queues_wakes_their_listeners(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_listener()
    sysdb.queues_announce(("mail", "sms"))  # SQLite: nothing to do, and no error
    if listener is None:
        assert sysdb.target.dialect == "sqlite"
        return
    try:
        sysdb.queues_announce(("mail", "sms"))
        heard: set[str] = set()
        while heard != {"mail", "sms"}:
            got = listener.wait(timeout=30)
            assert got, "no notification within 30 s"
            heard |= got
    finally:
        listener.close()


def test_close_ends_every_connection_and_a_new_instance_sees_the_rows(database_url: str) -> None:
    db = open_system_database(database_url)
    db.migrate()
    db.tasks_enqueue([new("a")])
    db.close()
    again = open_system_database(database_url)
    try:
        assert again.task_get("a") is not None
    finally:
        again.close()


@pytest.mark.parametrize("calls", [1, 2])
def test_close_can_be_called_again(sysdb: SystemDatabase, calls: int) -> None:
    for _ in range(calls):
        sysdb.close()


def test_a_resume_wakes_the_listeners_of_the_queue(sysdb: SystemDatabase) -> None:
    listener = sysdb.open_listener()
    if sysdb.target.dialect == "sqlite":
        assert listener is None
        return
    assert listener is not None
    try:
        sysdb.queue_set_paused(QueuePause("mail", True))
        sysdb.queue_set_paused(QueuePause("mail", False))
        heard: set[str] = set()
        while "mail" not in heard:
            got = listener.wait(timeout=30)
            assert got, "no notification within 30 s"
            heard |= got
    finally:
        listener.close()
