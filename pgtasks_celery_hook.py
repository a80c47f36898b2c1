"""Makes ``import celery`` and ``import kombu`` give pgtasks' Celery layer in any process.

``pgtasks_celery.pth`` (installed into site-packages with pgtasks) runs :func:`register` at
interpreter start-up. It costs one small module and one finder appended to ``sys.meta_path``;
nothing of pgtasks is imported until a process imports ``celery``, ``kombu`` or ``billiard``.

- Celery not installed: ``import celery`` (and ``kombu``, and the ``billiard`` names the
  integrations import) finds pgtasks' modules (:func:`pgtasks.compat.install`).
- Celery installed as well: the real one is imported, unless ``PGTASKS_CELERY=1`` is in the
  environment, which puts pgtasks' names first.
- ``PGTASKS_CELERY=0`` turns the hook off.
"""

from __future__ import annotations

import os
import sys
from _thread import get_ident

TYPE_CHECKING = False  # typing itself costs 2 ms of start-up; mypy reads this name as True
if TYPE_CHECKING:  # kept out of start-up: every Python process of the environment loads this
    import importlib.machinery
    import types
    from collections.abc import Sequence
    from typing import Any

ROOTS = ("celery", "kombu", "billiard")
DOCS = "see docs/celery-migration.md"


def _root(fullname: str) -> str | None:
    head = fullname.partition(".")[0]
    return head if head in ROOTS else None


class _Present:
    """A loader that hands over the module ``install()`` put into ``sys.modules``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return sys.modules[spec.name]

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class CeleryFinder:
    """A meta path finder serving Celery's, kombu's and billiard's names from
    :mod:`pgtasks.compat`."""

    def __init__(self) -> None:
        # Threads running install(): imports it makes from that thread must not come back here.
        self._installing: set[int] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        root = _root(fullname)
        thread = get_ident()
        if root is None or thread in self._installing:
            return None
        self._installing.add(thread)
        try:
            from pgtasks.compat import install, installed  # only now: pgtasks is imported on demand
            from pgtasks.compat.install import load_lazy

            if not installed():
                install()
            if fullname not in sys.modules:
                load_lazy(fullname)  # celery.contrib.pytest: imported only when asked for
        finally:
            self._installing.discard(thread)
        if fullname in sys.modules:
            import importlib.machinery

            loader: Any = _Present()  # a loader by its two methods (importlib.abc is slow to import)
            return importlib.machinery.ModuleSpec(fullname, loader, is_package=fullname in ROOTS)
        if root == "billiard":
            return None  # only the names the integrations use; nothing else pretends to exist
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: pgtasks serves Celery's public modules, and not this one "
            f"({DOCS}; `pgtasks celery-check` lists what an app uses)",
            name=fullname,
        )


def register() -> None:
    """Add the finder: last (only where nothing else finds celery), or first with
    ``PGTASKS_CELERY=1``. Idempotent."""
    setting = os.environ.get("PGTASKS_CELERY", "").strip().lower()
    if setting in ("0", "off", "false", "no"):
        return
    if any(isinstance(f, CeleryFinder) for f in sys.meta_path):
        return
    if setting in ("1", "on", "true", "yes"):
        sys.meta_path.insert(0, CeleryFinder())
    else:
        sys.meta_path.append(CeleryFinder())
