"""What mirroring task states into django-celery-results costs a worker
(compat/bridge/django_results.py): the django_shop project of tests/realapps with
``result_backend`` "django-db" against the same project with no backend to mirror into.

N tasks are queued first; then the project's worker starts and the clock runs until every task
has ended in pgtasks ("drained"), and, with the mirror on, until every TaskResult row is
written ("rows"). Needs a venv with pgtasks, Django and django-celery-results (installed
``--no-deps``, as tests/realapps/test_django_shop.py installs it), run from the repo root:

    python -m bench.django_results_mirror --tasks 3000 --pool prefork --concurrency 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.pgserver import PostgresServer

PROJECT = Path(__file__).resolve().parents[1] / "tests" / "realapps" / "django_shop"

SEND = """
import json, sys
from orders.tasks import add
from shop.celery import app
ids = [add.delay(i, i).id for i in range(int(sys.argv[1]))]
print(json.dumps(ids[-1]))
"""

WAIT = """
import json, sys, time
import psycopg
from django_celery_results.models import TaskResult
n, mirrored, url, schema = int(sys.argv[1]), sys.argv[2] == "on", sys.argv[3], sys.argv[4]
start = time.monotonic()
drained = rows = None
with psycopg.connect(url.split("?")[0], autocommit=True) as db:
    while time.monotonic() - start < 600:
        if drained is None:
            query = f"SELECT count(*) FROM {schema}.workflow_status WHERE status = 'SUCCESS'"
            if db.execute(query).fetchone()[0] >= n:
                drained = time.monotonic() - start
        if drained is not None and (not mirrored or TaskResult.objects.count() >= n):
            rows = time.monotonic() - start
            break
        time.sleep(0.05)
print(json.dumps({"drained": drained, "rows": rows}))
"""


def _shell(project: Path, env: dict[str, str], code: str, *argv: str) -> str:
    script = project / "bench_script.py"
    script.write_text(
        "import django, os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'shop.settings')\n"
        "django.setup()\n" + code
    )
    done = subprocess.run(
        [sys.executable, str(script), *argv],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    return done.stdout.strip().splitlines()[-1]


def run(mode: str, tasks: int, pool: str, concurrency: int, url: str, root: Path) -> dict[str, float | None]:
    project = root / mode
    shutil.copytree(PROJECT, project)
    env = dict(os.environ, CELERY_BROKER_URL=url, SHOP_RESULT_BACKEND="django-db" if mode == "on" else "none")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=project, env=env, check=True)
    _shell(project, env, SEND, str(tasks))
    celery = str(Path(sys.executable).parent / "celery")
    argv = [celery, "-A", "shop", "worker", "-l", "warning", "-P", pool, "-c", str(concurrency)]
    worker = subprocess.Popen(
        argv, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        figures = json.loads(_shell(project, env, WAIT, str(tasks), mode, url, f"bench_{mode}"))
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--pool", default="prefork")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    server = PostgresServer().start()
    root = Path(tempfile.mkdtemp(prefix="pgtasks-mirror-bench-"))
    try:
        for mode in ("off", "on"):
            with_db = server.url.rsplit("/", 1)[0] + f"/postgres?schema=bench_{mode}"
            figures = run(mode, args.tasks, args.pool, args.concurrency, with_db, root)
            per_task = {k: (v / args.tasks * 1000 if v else None) for k, v in figures.items()}
            print(json.dumps({"mirror": mode, "seconds": figures, "ms_per_task": per_task}))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
