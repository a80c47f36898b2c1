"""Canvas latency and throughput on PostgreSQL (fsync on), one worker with threads -c 8:

- a chain of 100 tasks (each link released in its parent's outcome transaction): per hop;
- a group of 1,000 tasks, joined;
- a chord of 1,000 header tasks and one body: from send to the body's result.

    python -m bench.canvas
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.pgserver import PostgresServer

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    server = PostgresServer(fsync=True).start()
    url = server.url + "?schema=canvasbench"
    os.environ["PGTASKS_DATABASE_URL"] = url
    from bench.canvas_app import app, inc, total  # installs the celery import hook first

    chain, chord, group = (getattr(sys.modules["celery"], n) for n in ("chain", "chord", "group"))

    app.conf.broker_url = url
    app.engine.admin.migrate()
    argv = [sys.executable, "-m", "pgtasks", "worker", "-A", "bench.canvas_app", "-P", "threads", "-c", "8"]
    worker = subprocess.Popen([*argv, "-l", "WARNING"], cwd=REPO, env=dict(os.environ))
    try:
        inc.delay(0).get(timeout=60)  # the worker is up
        rows = []
        started = time.perf_counter()
        assert chain(inc.s(0), *(inc.s() for _ in range(99))).delay().get(timeout=300) == 100
        elapsed = time.perf_counter() - started
        rows.append(("chain of 100, per hop", f"{elapsed / 100 * 1000:.1f} ms"))
        started = time.perf_counter()
        assert len(group(inc.s(i) for i in range(1000)).apply_async().get(timeout=300)) == 1000
        elapsed = time.perf_counter() - started
        rows.append(("group of 1,000, send to join", f"{elapsed:.2f} s ({1000 / elapsed:,.0f} tasks/s)"))
        started = time.perf_counter()
        body = chord((inc.s(i) for i in range(1000)), total.s()).apply_async()
        assert body.get(timeout=300) == sum(range(1, 1001))
        elapsed = time.perf_counter() - started
        rate = f"{elapsed:.2f} s ({1001 / elapsed:,.0f} tasks/s)"
        rows.append(("chord of 1,000 + body, send to result", rate))
        for name, value in rows:
            print(f"{name:40} {value}")
    finally:
        worker.terminate()
        worker.wait(60)
        app.close()
        server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
