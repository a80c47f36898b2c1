"""Celery's ``celery.__main__``: its :func:`main` is what the real Celery's ``celery`` console
script calls; while pgtasks' names win (``PGTASKS_CELERY=1``) it runs the ``pgtasks`` command
line with the same arguments, as ``python -m celery <args>`` does."""

from __future__ import annotations

import sys

from pgtasks.compat.bridge.celery_version import VERSION_BANNER
from pgtasks.compat.bridge.command_line import pgtasks_command

__all__ = ["main"]


def main() -> int:
    """``celery <args>``: ``pgtasks <args>`` (``--version`` prints Celery's banner, as the
    ``celery`` command does)."""
    return int(pgtasks_command()(sys.argv[1:], version=VERSION_BANNER))


if __name__ == "__main__":  # python -m celery
    sys.exit(main())
