"""Makes ``import celery`` and ``import kombu`` give pgtasks' Celery layer in any process.

``pgtasks_celery.pth`` (installed into site-packages with pgtasks) runs :func:`register` at
interpreter start-up. It costs one small module and one finder appended to ``sys.meta_path``;
nothing of pgtasks is imported until a process imports ``celery``, ``kombu`` or ``billiard``.

- Celery not installed: ``import celery`` (and ``kombu``, and the ``billiard`` names the
  integrations import) finds pgtasks' modules by the import rule (``celery.X.Y`` is
  ``pgtasks/compat/celery/X/Y.py``: :mod:`pgtasks.compat.bridge.install`), which the first such
  import installs (:func:`pgtasks.compat.install`).
- Celery installed as well: the real one is imported, unless ``PGTASKS_CELERY=1`` is in the
  environment, which puts pgtasks' names first.
- ``PGTASKS_CELERY=0`` turns the hook off.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs 2 ms of start-up; mypy reads this name as True
if TYPE_CHECKING:  # kept out of start-up: every Python process of the environment loads this
    import importlib.machinery
    import types
    from collections.abc import Sequence

ROOTS = ("celery", "kombu", "billiard")


class CeleryFinder:
    """A meta path finder for the names below ``celery``, ``kombu`` and ``billiard``: it asks
    the import rule of :mod:`pgtasks.compat.bridge.install` (``celery.X.Y`` is
    ``pgtasks/compat/celery/X/Y.py``), importing pgtasks only when such a name is imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in ROOTS:
            return None
        from pgtasks.compat.bridge.install import find_spec  # only now: pgtasks is imported on demand

        return find_spec(fullname)


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
