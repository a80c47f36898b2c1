"""Conformance of the system database, on PostgreSQL and SQLite: queue settings."""

from __future__ import annotations

import pytest

from pgtasks.sysdb import ConfigurationError, SystemDatabase
from pgtasks.sysdb.records import QueueSettings, QueueUpsert


def test_queue_settings_upsert_changes_only_what_is_named(sysdb: SystemDatabase) -> None:
    created = sysdb.queue_upsert(
        QueueUpsert(QueueSettings("mail", concurrency=5, rate_limit_max=10, rate_limit_period_sec=60.0))
    )
    assert created.concurrency == 5 and created.rate_limit_max == 10
    changed = sysdb.queue_upsert(
        QueueUpsert(QueueSettings("mail", concurrency=2), frozenset({"concurrency"}))
    )
    assert changed.concurrency == 2 and changed.rate_limit_max == 10 and changed.rate_limit_period_sec == 60.0
    assert [q.name for q in sysdb.queues_get()] == ["mail"]
    assert sysdb.queues_get(("other",)) == []


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        (QueueSettings("q", concurrency=0), "concurrency"),
        (QueueSettings("q", worker_concurrency=-1), "worker_concurrency"),
        (QueueSettings("q", rate_limit_max=5), "rate limit"),
        (QueueSettings("q", rate_limit_max=5, rate_limit_period_sec=float("nan")), "rate_limit_period_sec"),
    ],
)
def test_bad_queue_settings_are_refused(sysdb: SystemDatabase, settings: QueueSettings, field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        sysdb.queue_upsert(QueueUpsert(settings))
    with pytest.raises(ConfigurationError, match="unknown queue settings"):
        sysdb.queue_upsert(QueueUpsert(QueueSettings("q"), frozenset({"name; DROP TABLE queues"})))
