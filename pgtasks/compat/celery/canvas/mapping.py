"""Celery's ``xmap``, ``xstarmap`` and ``chunks`` (``task.map``, ``task.starmap``,
``task.chunks``): one task over many argument sets, each sent as the built-in task that loops
in one worker (``celery.map`` / ``celery.starmap``, app/builtins.py), chunks as a group of
those."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.canvas.group import group
from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature
from pgtasks.compat.celery.canvas.workflow import Workflow

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["chunks", "xmap", "xstarmap"]


class _Delegating(Workflow):
    """A workflow sent as another one (``_delegate``)."""

    def _delegate(self) -> Any:
        raise NotImplementedError

    def apply_async(
        self, args: Any = None, kwargs: Any = None, route_name: Any = None, **options: Any
    ) -> Any:
        return self._delegate().apply_async(**options)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        return self._delegate().apply()


class xmap(_Delegating):
    """One task that calls ``task`` on each item, in one worker: ``add.map([1, 2])``."""

    def __init__(self, task: Any, it: Any, app: Celery | None = None, **options: Any) -> None:
        super().__init__("celery.map", [maybe_signature(task)], app, **options)
        self["args"] = (maybe_signature(task).name, list(it))

    def _as_signature(self) -> Signature:
        return Signature(self["task"], self["args"], {}, dict(self.options), app=self.app)

    _delegate = _as_signature


class xstarmap(xmap):
    """Like ``xmap`` with each item unpacked as arguments: ``add.starmap([(1, 2), (3, 4)])``."""

    def __init__(self, task: Any, it: Any, app: Celery | None = None, **options: Any) -> None:
        super().__init__(task, [list(item) for item in it], app, **options)
        self["task"] = "celery.starmap"


class chunks(_Delegating):
    """``task`` over ``it`` in chunks of ``n`` items: a group of ``xstarmap`` tasks."""

    def __init__(self, task: Any, it: Any, n: int, app: Celery | None = None, **options: Any) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"chunks needs a chunk size >= 1, not {n!r}")
        items = [list(item) for item in it]
        parts = [items[i : i + n] for i in range(0, len(items), n)]
        super().__init__("celery.chunks", [xstarmap(task, part, app=app) for part in parts], app, **options)

    def group(self) -> group:
        return group([part._as_signature() for part in self.tasks], app=self._app)

    def _delegate(self) -> Any:
        return self.group()
