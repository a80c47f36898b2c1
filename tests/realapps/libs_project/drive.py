"""Sends the project's tasks to the running worker and prints, as JSON, what each library
answered (its results, its lock, its view)."""

import json
import os
import time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "libsite.settings")
django.setup()

import redis  # noqa: E402
from django.core.mail import send_mail  # noqa: E402
from django.test import Client  # noqa: E402
from jobs.tasks import import_rows, rebuild_index, refresh_report, reindex, sent_mail  # noqa: E402

GATES = Path(os.environ["GATE_DIR"])


def until(check, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)
    return found


def celery_once():
    first = refresh_report.delay("once")
    duplicate = refresh_report.delay("once")  # graceful: rejected at once, not sent
    (GATES / "once").touch()
    done = first.get(timeout=60)
    until(lambda: not os.listdir(os.environ["ONCE_DIR"]), "celery-once's lock released")
    again = refresh_report.delay("once")
    return {
        "first": done,
        "duplicate": [type(duplicate).__name__, duplicate.state, duplicate.id],
        "again": [again.id != first.id, again.get(timeout=60)],
    }


def celery_singleton():
    locks = redis.Redis.from_url(os.environ["SINGLETON_REDIS_URL"])
    first = rebuild_index.delay("single")
    duplicate = rebuild_index.delay("single")  # the running one's result
    held = len(locks.keys("SINGLETONLOCK_*"))
    (GATES / "single").touch()
    done = first.get(timeout=60)
    until(lambda: not locks.keys("SINGLETONLOCK_*"), "celery-singleton's lock released")
    again = rebuild_index.delay("single")
    return {
        "first": done,
        "duplicate_is_first": duplicate.id == first.id,
        "locks_while_running": held,
        "again": [again.id != first.id, again.get(timeout=60)],
    }


def pgtasks_deduplication():
    """pgtasks' equivalent of both, without Redis: one unfinished task per key."""
    options = {"deduplication_id": "reindex", "on_duplicate": "return"}
    first = reindex.apply_async(("dedup",), **options)
    duplicate = reindex.apply_async(("dedup",), **options)
    (GATES / "dedup").touch()
    done = first.get(timeout=60)
    again = reindex.apply_async(("dedup",), **options)
    return {
        "first": done,
        "duplicate_is_first": duplicate.id == first.id,
        "again": [again.id != first.id, again.get(timeout=60)],
    }


def django_celery_email():
    # its backend answers with the results of the tasks it sent
    sent = send_mail("Welcome", "Hello Ada", "shop@example.com", ["ada@example.com"])
    outbox = until(lambda: sent_mail.delay().get(timeout=60), "the mail in the worker's outbox")
    return {"send_mail": [type(result).__name__ for result in sent], "outbox": outbox}


def celery_progress():
    task = import_rows.delay("rows")
    browser = Client()

    def view():
        answer = browser.get(f"/celery-progress/{task.id}/")
        assert answer.status_code == 200, answer.content
        return json.loads(answer.content)

    running = until(lambda: (v := view())["progress"].get("current") == 1 and v, "progress 1 of 4")
    (GATES / "rows").touch()
    finished = until(lambda: (v := view())["complete"] and v, "the task complete in the view")
    return {"running": running, "finished": finished}


SCENARIOS = [celery_once, celery_singleton, pgtasks_deduplication, django_celery_email, celery_progress]
print(json.dumps({scenario.__name__: scenario() for scenario in SCENARIOS}))
