"""``app.start()`` and ``app.worker_main()``: the ``pgtasks`` command line run from Python with
a given app object."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from collections.abc import Callable
from typing import Any


def run_command(app: Any, argv: list[str] | None) -> int:
    """``app.start(argv)`` / ``app.worker_main(argv)``: the ``pgtasks`` command line with this
    app. The command is found as the installed ``pgtasks`` console script, so this layer (below
    the CLI) never imports ``pgtasks.cli``."""
    scripts = importlib.metadata.entry_points(group="console_scripts", name="pgtasks")
    if not scripts:
        raise RuntimeError("app.start() needs the pgtasks command: install the pgtasks package")
    main: Callable[[list[str]], int] = next(iter(scripts)).load()
    module = types.ModuleType("_pgtasks_started_app")
    module.app = app  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    args = list(sys.argv[1:] if argv is None else argv)
    return main(["-A", module.__name__, *args])
