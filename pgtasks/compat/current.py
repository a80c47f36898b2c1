"""Which Celery app is current: the registry of the apps the user created, at the bottom of
``compat`` so every module can look the current app up without importing ``app.py``.

``app.py`` fills it: each new app registers itself, and registers how to make the default app
used when none was created (Celery's ``current_app`` is never empty).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery

_lock = threading.Lock()
_apps: list[weakref.ref[Celery]] = []
_current: list[Celery] = []  # the current app (at most one): Celery's "current_app"
_make_default: list[Callable[[], Celery]] = []  # set once by app.py


def register(app: Celery, set_as_current: bool) -> None:
    """Remember ``app`` (weakly); make it current if asked or if none is."""
    with _lock:
        _apps.append(weakref.ref(app))
        if set_as_current or not _current:
            _current[:] = [app]


def set_current(app: Celery) -> None:
    """Make ``app`` the current app."""
    with _lock:
        _current[:] = [app]


def current_or_none() -> Celery | None:
    """The current app, or None if no app was created yet."""
    with _lock:
        return _current[0] if _current else None


def current_app() -> Celery:
    """The current app: the last one created (or set current); a default app if none."""
    found = current_or_none()
    if found is not None:
        return found
    with _lock:
        make = _make_default[0] if _make_default else None
    if make is None:
        raise RuntimeError("pgtasks.compat.app was not imported: no Celery app can be made")
    return make()


def live_apps() -> list[Celery]:
    """Every app created and still referenced."""
    with _lock:
        return [app for ref in _apps if (app := ref()) is not None]


def set_default_factory(make: Callable[[], Celery]) -> None:
    """How ``current_app()`` makes an app when none was created (called once by app.py)."""
    with _lock:
        _make_default[:] = [make]
