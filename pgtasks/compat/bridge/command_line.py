"""The ``pgtasks`` command line run from Python: ``app.start()``, ``app.worker_main()`` and
``celery.__main__.main`` (the real Celery's console script, run while pgtasks' names win).

The command is found as the installed ``pgtasks`` console script, so this layer (below the
command line) never imports ``pgtasks.cli``."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from collections.abc import Callable
from typing import Any


def pgtasks_command() -> Callable[..., int]:
    """The ``main(argv, version=None)`` of the installed ``pgtasks`` console script."""
    scripts = importlib.metadata.entry_points(group="console_scripts", name="pgtasks")
    if not scripts:
        raise RuntimeError("the pgtasks command is not installed: install the pgtasks package")
    main: Callable[..., int] = next(iter(scripts)).load()
    return main


def run_command(app: Any, argv: list[str] | None) -> int:
    """``app.start(argv)`` / ``app.worker_main(argv)``: the ``pgtasks`` command line with this
    app (given to ``-A`` as a module of its own)."""
    module = types.ModuleType("_pgtasks_started_app")
    module.app = app  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    args = list(sys.argv[1:] if argv is None else argv)
    return int(pgtasks_command()(["-A", module.__name__, *args]))
