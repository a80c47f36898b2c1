"""The pools: one default, decided in pools.py and used by WorkerOptions, PoolOptions and the
``pgtasks worker`` command; each pool says what it can do; the options a pool cannot honour
are refused before a worker starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.cli.main import _parser
from pgtasks.engine.core import Engine
from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.settings import Settings
from pgtasks.worker.pools import DEFAULT_POOL, POOLS, PoolOptions, make_pool
from pgtasks.worker.worker import WorkerOptions


def test_one_default_pool_prefork_as_in_celery() -> None:
    assert DEFAULT_POOL == "prefork"
    assert WorkerOptions().pool == PoolOptions().kind == DEFAULT_POOL
    assert _parser().parse_args(["worker"]).pool == DEFAULT_POOL


@pytest.mark.parametrize(
    ("kind", "prefetches", "terminates"),
    [("prefork", True, True), ("threads", True, False), ("solo", False, False), ("asyncio", True, True)],
)
def test_each_pool_says_what_it_can_do(tmp_path: Path, kind: str, prefetches: bool, terminates: bool) -> None:
    assert kind in POOLS
    engine = Engine(Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    pool = make_pool(engine, "w", PoolOptions(kind, 2), lambda record, outcome: None)
    try:
        assert (pool.prefetches, pool.terminates) == (prefetches, terminates)
    finally:
        pool.shutdown(wait=False)
        engine.close()
    assert not (tmp_path / "db.sqlite3").exists()  # making a pool opens no connection


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pool": "gevent"}, "unknown pool 'gevent'; choose one of prefork, threads, solo, asyncio"),
        (
            {"pool": "threads", "time_limit": 5.0},
            "time limits need the prefork pool (-P prefork), or -P asyncio for async tasks: a thread "
            "cannot be killed safely",
        ),
        ({"pool": "solo", "soft_time_limit": 5.0}, "time limits need the prefork pool"),
        ({"pool": "asyncio", "max_tasks_per_child": 10}, "max_tasks_per_child needs the prefork pool"),
        ({"max_tasks_per_child": 0}, "max_tasks_per_child must be a whole number >= 1, not 0"),
        ({"max_tasks_per_child": "x"}, "max_tasks_per_child must be a whole number >= 1, not 'x'"),
        ({"time_limit": "abc"}, "time_limit must be a positive number of seconds, not 'abc'"),
        ({"soft_time_limit": True}, "soft_time_limit must be a positive number of seconds, not True"),
        ({"pool": "threads", "max_memory_per_child": 1000}, "max_memory_per_child needs the prefork pool"),
        (
            {"max_memory_per_child": 0},
            "max_memory_per_child must be a whole number of kilobytes >= 1, not 0",
        ),
        ({"time_limit": -1.0}, "time_limit must be a positive number of seconds"),
    ],
)
def test_what_a_pool_cannot_honour_is_refused_with_the_worker_options(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        WorkerOptions(**options)  # type: ignore[arg-type]
    assert message in str(refused.value)
    assert WorkerOptions(pool="asyncio", time_limit=5.0).pool_options().time_limit == 5.0
