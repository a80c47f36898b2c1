"""The Celery release whose documented API the Celery layer follows (docs/celery-migration.md):
``celery.__version__``, ``VERSION`` and ``VERSION_BANNER`` (compat/celery/__init__.py) and what
``celery --version`` and ``celery report`` print. Projects and libraries check
``celery.VERSION >= (5, x)`` to choose the API they use; this is the one pgtasks offers.
``SERIES``, Celery's code name, says whose implementation runs."""

from __future__ import annotations

from collections import namedtuple

__all__ = ["SERIES", "VERSION", "VERSION_BANNER", "__version__", "version_info_t"]

version_info_t = namedtuple("version_info_t", ("major", "minor", "micro", "releaselevel", "serial"))
VERSION = version_info_t(5, 7, 0, "", "")
__version__ = "5.7.0"
SERIES = "pgtasks"
VERSION_BANNER = f"{__version__} ({SERIES})"
