"""Run by the real Celery (``.venv-celery``): sends the tasks a Celery deployment would have
waiting in its Redis broker at cut-over, with no worker consuming them. Prints their ids."""

from __future__ import annotations

import json
import sys

from celery import Celery, chain

broker = sys.argv[1]
app = Celery("producer", broker=broker)
add = app.signature("imp.add")
sent = {
    "plain": app.send_task("imp.add", (1, 2), task_id="m-plain").id,
    "eta": app.send_task("imp.add", (3, 4), task_id="m-eta", countdown=3600).id,
    "other": app.send_task("imp.add", (5, 6), task_id="m-other", queue="other", expires=7200).id,
    "linked": app.send_task("imp.add", (7, 8), task_id="m-linked", link=app.signature("imp.add", (100,))).id,
    "retried": app.send_task("imp.add", (9, 9), task_id="m-retried", retries=2).id,
}
# A chain's first step is what waits in the queue (the rest travels inside its message).
sent["chained"] = (
    chain(app.signature("imp.add", (1, 1)), app.signature("imp.add", (2,))).apply_async().parent.id
)
print(json.dumps(sent))
