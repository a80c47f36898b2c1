"""Celery's ``xmap``, ``xstarmap`` and ``chunks`` (``task.map``, ``task.starmap``,
``task.chunks``): one task over many argument sets, each sent as the built-in task that loops
in one worker (``celery.map`` / ``celery.starmap``, app/builtins.py), chunks as a group of
those."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.canvas.group import group
from pgtasks.compat.celery.canvas.reprs import call_repr, given_items, map_repr
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


@Signature.register_type(name="celery.map")
class xmap(_Delegating):
    """One task that calls ``task`` on each item, in one worker: ``add.map([1, 2])``."""

    @classmethod
    def rebuild(cls, d: dict[str, Any], app: Celery | None) -> Signature | None:
        """pgtasks' dict (``args``: the task's name and the items; ``kwargs["tasks"]``: the
        task), or Celery's (``kwargs``: ``task`` and ``it``)."""
        kwargs, args = d.get("kwargs") or {}, list(d.get("args") or ())
        options = dict(d.get("options") or {})
        if isinstance(kwargs, dict) and "task" in kwargs and "it" in kwargs:
            return cls(maybe_signature(kwargs["task"], app=app), kwargs["it"], app=app, **options)
        tasks = kwargs.get("tasks") if isinstance(kwargs, dict) else None
        if isinstance(tasks, list) and len(tasks) == 1 and len(args) == 2:
            return cls(maybe_signature(tasks[0], app=app), args[1], app=app, **options)
        return None

    def __init__(self, task: Any, it: Any, app: Celery | None = None, **options: Any) -> None:
        super().__init__("celery.map", [maybe_signature(task)], app, **options)
        self["args"] = (maybe_signature(task).name, list(_iterable(it, "map")))
        self._given = given_items(it)

    def __repr__(self) -> str:
        """As Celery prints it: ``[proj.tsum(x) for x in [[1, 2], [3]]]``."""
        return map_repr(self["args"][0], self._given, star=self["task"] == "celery.starmap")

    def _as_signature(self) -> Signature:
        return Signature(self["task"], self["args"], {}, dict(self.options), app=self.app)

    _delegate = _as_signature


@Signature.register_type(name="celery.starmap")
class xstarmap(xmap):
    """Like ``xmap`` with each item unpacked as arguments: ``add.starmap([(1, 2), (3, 4)])``."""

    def __init__(self, task: Any, it: Any, app: Celery | None = None, **options: Any) -> None:
        given = given_items(_iterable(it, "starmap"))
        items = list(it)
        super().__init__(task, _argument_lists(items, "starmap"), app, **options)
        self["task"] = "celery.starmap"
        self._given = items if isinstance(given, (list, tuple)) else given


@Signature.register_type(name="celery.chunks")
class chunks(_Delegating):
    """``task`` over ``it`` in chunks of ``n`` items: a group of ``xstarmap`` tasks."""

    @classmethod
    def rebuild(cls, d: dict[str, Any], app: Celery | None) -> Signature | None:
        """Celery's dict (``kwargs``: ``task``, ``it``, ``n``), or pgtasks' (its parts: a
        ``celery.starmap`` dict per chunk, each of ``n`` items but the last)."""
        kwargs = d.get("kwargs") or {}
        options = dict(d.get("options") or {})
        if not isinstance(kwargs, dict):
            return None
        if {"task", "it", "n"} <= set(kwargs):
            task = maybe_signature(kwargs["task"], app=app)
            return cls(task, kwargs["it"], kwargs["n"], app=app, **options)
        parts = [maybe_signature(t, app=app) for t in kwargs.get("tasks") or ()]
        if not parts or not all(isinstance(p, xstarmap) for p in parts):
            return None
        items = [item for part in parts for item in part["args"][1]]
        task = maybe_signature(parts[0]["kwargs"]["tasks"][0], app=app)
        return cls(task, items, len(parts[0]["args"][1]), app=app, **options)

    def __init__(self, task: Any, it: Any, n: int, app: Celery | None = None, **options: Any) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"chunks needs a chunk size >= 1, not {n!r}")
        given = given_items(_iterable(it, "chunks"))
        items = _argument_lists(it, "chunks")
        parts = [items[i : i + n] for i in range(0, len(items), n)]
        super().__init__("celery.chunks", [xstarmap(task, part, app=app) for part in parts], app, **options)
        self._given = (maybe_signature(task), it if isinstance(given, (list, tuple)) else given, n)

    def __repr__(self) -> str:
        """As Celery prints it: ``celery.chunks(task=proj.add(), it=[(1, 2)], n=1)``."""
        task, items, n = self._given
        return call_repr("celery.chunks", (), {"task": task, "it": items, "n": n})

    def group(self) -> group:
        return group([part._as_signature() for part in self.tasks], app=self._app)

    def _delegate(self) -> Any:
        return self.group()


def _iterable(it: Any, kind: str) -> Any:
    """``it`` when it is an iterable of items (not a string); TypeError naming ``kind``."""
    if isinstance(it, (str, bytes)) or not isinstance(it, Iterable):
        raise TypeError(f"{kind} takes an iterable of items, not {type(it).__name__}")
    return it


def _argument_lists(items: Iterable[Any], kind: str) -> list[list[Any]]:
    """Each item as a list of arguments; TypeError naming the item that is none."""
    lists = []
    for index, item in enumerate(items):
        if isinstance(item, (str, bytes)) or not isinstance(item, Iterable):
            raise TypeError(
                f"{kind} item {index} must be a list or tuple of arguments, not {type(item).__name__}"
            )
        lists.append(list(item))
    return lists
