"""A Celery app that adds command-line options, as Celery's docs show (``app.user_options``)."""

from __future__ import annotations

import os

from celery import Celery, signals
from click import Option

from tests.compat.apps.ledger import note

app = Celery("options", broker=os.environ.get("PGTASKS_DATABASE_URL"))
app.user_options["preload"].add(
    Option(("-Z", "--template"), default="default", help="Configuration template to use.")
)
app.user_options["worker"].add(Option(("--enable-my-option",), is_flag=True, help="Enable custom option."))


@signals.user_preload_options.connect
def on_preload_parsed(options, **kwargs):
    note("preload", options["template"])
