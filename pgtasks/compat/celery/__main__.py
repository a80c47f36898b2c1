"""Celery's ``celery.__main__``: its :func:`main` is what the real Celery's ``celery`` console
script calls; while pgtasks' names win (``PGTASKS_CELERY=1``) it runs the ``pgtasks`` command
line with the same arguments."""

from __future__ import annotations

import sys

from pgtasks.compat.bridge.command_line import pgtasks_command

__all__ = ["main"]


def main() -> int:
    """``celery <args>``: ``pgtasks <args>``."""
    return int(pgtasks_command()(sys.argv[1:]))
