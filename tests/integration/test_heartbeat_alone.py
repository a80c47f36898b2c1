"""The heartbeat has a thread of its own: a maintenance round that hangs (a recovery behind a
lock an operator holds, a slow query) does not hold the lease back."""

from __future__ import annotations

import threading

from pgtasks import App
from pgtasks.sysdb.records import ExecutorInfo
from pgtasks.worker.lease import LeaseKeeper
from tests.support.inprocess import wait_for


def test_heartbeats_go_on_while_a_maintenance_round_hangs(database_url: str) -> None:
    app = App("heartbeat-alone", database_url=database_url)
    store, sysdb = app.engine.worker_api, app.engine.database.sysdb
    me = ExecutorInfo("me", "host", 2, "v1", ("default",), lease_ms=400)
    store.register_executor(me)
    hanging, release = threading.Event(), threading.Event()

    def maintenance_round() -> None:  # the worker's part of every maintenance round
        hanging.set()
        release.wait(60)

    keeper = LeaseKeeper(store, me, lease_seconds=0.4, also=maintenance_round)
    keeper.start()
    try:
        assert hanging.wait(30), "no maintenance round ran"

        def heartbeat() -> int:
            return next(e.last_heartbeat for e in sysdb.executors_list() if e.executor_id == "me")

        seen = {heartbeat()}

        def renewed_three_times() -> bool:
            seen.add(heartbeat())
            return len(seen) >= 4

        wait_for(renewed_three_times, 30, "heartbeats while the maintenance round hangs")
        assert not release.is_set()  # the round still hangs: the renewals came from elsewhere
    finally:
        release.set()
        keeper.stop()
    app.close()
