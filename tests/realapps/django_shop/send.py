"""A plain script that sends a task and waits for its result."""

import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
django.setup()

from orders.tasks import add  # noqa: E402

print(add.delay(20, 22).get(timeout=60))
sys.exit(0)
