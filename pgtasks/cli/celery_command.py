"""The ``celery`` command that pgtasks installs, so that Procfiles, Dockerfiles and
Kubernetes manifests saying ``celery -A proj worker -l info -Q a,b -c 8`` or
``celery -A proj beat`` run pgtasks unchanged.

Where the real Celery is installed too, ``celery`` runs the real one, unless
``PGTASKS_CELERY=1`` is set (as for ``import celery``, see pgtasks_celery_hook). ``celery
--version`` prints ``celery.VERSION_BANNER`` (``5.7.0 (pgtasks)``), as Celery's does."""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Sequence

from pgtasks.cli.main import main as pgtasks_main

TRUE = ("1", "on", "true", "yes")


def real_celery_wanted() -> bool:
    """True when the real celery package is installed and PGTASKS_CELERY does not ask for
    pgtasks instead."""
    if os.environ.get("PGTASKS_CELERY", "").strip().lower() in TRUE:
        return False
    spec = importlib.machinery.PathFinder.find_spec("celery")
    return spec is not None and spec.origin is not None and "pgtasks" not in spec.origin


def main(argv: Sequence[str] | None = None) -> int:
    """``celery <args>``: the real Celery where it is wanted, else ``pgtasks <args>``."""
    if real_celery_wanted():
        # The real package, found by the path finder ahead of pgtasks' import hook.
        from celery.__main__ import main as celery_main  # type: ignore[import-not-found]

        if argv is not None:
            sys.argv = [sys.argv[0], *argv]
        result = celery_main()
        return int(result or 0)
    # why: the Celery layer is imported only when the celery command runs pgtasks
    from pgtasks.compat.bridge.celery_version import VERSION_BANNER

    return pgtasks_main(argv, version=VERSION_BANNER)  # celery --version: Celery's banner
