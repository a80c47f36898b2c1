"""``pgtasks import-celery`` against a real redis-server fed by the real Celery (a separate venv):
the waiting messages become pgtasks tasks with their ids, arguments, ETA, expiry, queue and
callbacks, leave Redis only once committed, are never sent twice by a second run, and run on a
pgtasks worker. A chain's step is left in Redis, with the reason."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks import Client
from tests.support.cli import REPO, run_pgtasks
from tests.support.processes import stop, worker_process
from tests.support.redis import RedisServer, celery_python


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.stop()


def _produce(redis: RedisServer) -> dict[str, str]:
    script = Path(__file__).parent / "celery_producer.py"
    done = subprocess.run(
        [str(celery_python()), str(script), redis.url], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_waiting_messages_move_to_pgtasks_once(redis: RedisServer, pg_url: str, tmp_path: Path) -> None:
    sent = _produce(redis)
    broker = redis.connect()
    assert broker.call("LLEN", "celery") == 5 and broker.call("LLEN", "other") == 1
    args = ("import-celery", "--broker", redis.url, "-Q", "celery,other")

    dry = run_pgtasks(*args, "--dry-run", url=pg_url)
    assert dry.returncode == 0, dry.stderr
    assert "would import 5 tasks" in dry.stdout and broker.call("LLEN", "celery") == 5

    first = run_pgtasks(*args, url=pg_url)
    assert first.returncode == 0, first.stderr
    assert "imported 5 tasks" in first.stdout and "removed 5 messages from the broker" in first.stdout
    assert f"left in the broker: {sent['chained']}: a step of a chain or chord" in first.stdout
    assert broker.call("LLEN", "celery") == 1 and broker.call("LLEN", "other") == 0  # the chain's step

    client = Client(pg_url)
    everything = {t.task_id: t for t in client.list_tasks(name="imp.add", limit=100)}
    tasks = {i: t for i, t in everything.items() if i.startswith("m-")}
    assert set(tasks) == {"m-plain", "m-eta", "m-other", "m-linked", "m-retried"}
    assert tasks["m-retried"].retries == 2 and tasks["m-plain"].retries == 0  # carried over
    [callback] = [t for i, t in everything.items() if i not in tasks]  # m-linked's, waiting for it
    assert callback.status.value == "WAITING"
    assert tasks["m-plain"].status.value == "ENQUEUED" and tasks["m-plain"].queue_name == "celery"
    eta = tasks["m-eta"]
    assert eta.status.value == "DELAYED" and eta.delay_until_epoch_ms is not None
    assert eta.delay_until_epoch_ms / 1000 > dt.datetime.now(dt.timezone.utc).timestamp() + 3000
    assert tasks["m-other"].queue_name == "other" and tasks["m-other"].expires_at_epoch_ms is not None

    again = run_pgtasks(*args, url=pg_url)  # the chain's step is still there: nothing else moves
    assert again.returncode == 0, again.stderr
    assert "imported 0 tasks" in again.stdout
    assert len(client.list_tasks(name="imp.add", limit=100)) == 6

    worker = worker_process(
        pg_url,
        tmp_path / "ledger",
        "w-imported",
        app="tests.migration.import_app",
        extra_args=("-Q", "celery,other"),
    )
    try:
        assert client.AsyncResult("m-plain").get(timeout=60) == 3
        assert client.AsyncResult("m-other").get(timeout=60) == 11
        assert client.AsyncResult("m-linked").get(timeout=60) == 15
        assert client.AsyncResult(callback.task_id).get(timeout=60) == 115  # imp.add(15, 100)
    finally:
        stop(worker)
        client.close()
        broker.close()


def test_reserved_messages_of_stopped_workers_with_unacked(redis: RedisServer, pg_url: str) -> None:
    """Celery's Redis transport keeps the messages a worker reserved (ETA tasks) in the
    ``unacked`` hash until it gives them back; --unacked imports those a stopped worker left."""
    _produce(redis)
    broker = redis.connect()
    reserved = broker.call("RPOP", "celery")  # the oldest: m-plain, as a worker reserves it
    broker.call("HSET", "unacked", "tag-1", json.dumps([json.loads(reserved), "", "celery"]))
    broker.call("ZADD", "unacked_index", 1, "tag-1")
    plain = run_pgtasks("import-celery", "--broker", redis.url, url=pg_url)
    assert plain.returncode == 0 and "imported 3 tasks" in plain.stdout, plain.stdout  # eta, linked, retried
    withheld = run_pgtasks("import-celery", "--broker", redis.url, "--unacked", url=pg_url)
    assert withheld.returncode == 0 and "imported 1 task from" in withheld.stdout, withheld.stdout
    assert broker.call("HLEN", "unacked") == 0 and broker.call("ZCARD", "unacked_index") == 0
    client = Client(pg_url)
    assert client.get_task("m-plain") is not None
    client.close()
    broker.close()


def test_bad_broker_urls_and_unreachable_brokers_fail_clearly(pg_url: str) -> None:
    wrong = run_pgtasks("import-celery", "--broker", "amqp://guest@localhost//", url=pg_url)
    assert (
        wrong.returncode != 0
        and "--broker must be a redis:// or rediss:// URL" in wrong.stderr + wrong.stdout
    )
    gone = run_pgtasks("import-celery", "--broker", "redis://:secret@127.0.0.1:1/0", url=pg_url)
    assert gone.returncode == 1 and "cannot connect to Redis at 127.0.0.1:1" in gone.stdout
    assert "secret" not in gone.stdout + gone.stderr
