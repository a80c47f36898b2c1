"""An application run by real `pgtasks beat` and `pgtasks worker -B` subprocesses.

Its one schedule comes from the environment: BEAT_TEST_CRON (default every second, six-field
cron), BEAT_TEST_BACKFILL ("1": automatic_backfill). The task appends its id to the ledger.
"""

from __future__ import annotations

import os

from pgtasks import App
from pgtasks.scheduler import define_schedule
from tests.support.ledger import append

app = App("beatapp", poll_interval=0.05)
app.add_schedule_source(
    lambda: [
        define_schedule(
            "tick",
            "beatapp.tick",
            cron=os.environ.get("BEAT_TEST_CRON", "* * * * * *"),
            automatic_backfill=os.environ.get("BEAT_TEST_BACKFILL", "1") == "1",
        )
    ]
)


@app.task(name="beatapp.tick")
def tick() -> str:
    append("ran")
    return "ok"
