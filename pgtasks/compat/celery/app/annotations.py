"""Celery's ``celery.app.annotations``: ``task_annotations``, attributes set on tasks by name
(``{'tasks.add': {'time_limit': 10}}``, ``'*'`` for every task) or by objects whose
``annotate(task)`` returns them. A key starting with ``@`` wraps the task's method of that
name: ``{'@on_failure': wrap}`` sets it to ``wrap(original)``.

A value that annotates nothing raises :class:`BadAnnotation` (a TypeError, as Celery's
``dict()`` of a task's entry raises) naming the setting: an entry that is not a dict of
attributes (or a list of pairs), or ``task_annotations = 5``, which Celery ignores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pgtasks.compat.kombu.utils.imports import symbol_by_name
from pgtasks.engine.errors import ConfigurationError

__all__ = ["BadAnnotation", "MapAnnotation", "prepare", "resolve_all"]


class BadAnnotation(ConfigurationError, TypeError):
    """A ``task_annotations`` value that annotates nothing (one line on the command line)."""


class MapAnnotation(dict):  # type: ignore[type-arg]
    """Annotations by task name; ``'*'`` for every task."""

    def annotate_any(self) -> Any:
        return self._attributes("*")

    def annotate(self, task: Any) -> Any:
        return self._attributes(task.name)

    def _attributes(self, key: str) -> dict[str, Any] | None:
        if key not in self:
            return None
        try:
            return dict(self[key])
        except (TypeError, ValueError):
            raise BadAnnotation(
                f"task_annotations[{key!r}] must be a dict of attributes, not {self[key]!r}"
            ) from None


def prepare(annotations: Any) -> list[Any]:
    """The ``task_annotations`` setting as annotation objects: a dict becomes a
    :class:`MapAnnotation`, an import path the instance of the class it names."""
    if annotations is None:
        return []
    if not isinstance(annotations, (list, tuple)):
        annotations = (annotations,)
    return [_expand(annotation) for annotation in annotations]


def _expand(annotation: Any) -> Any:
    if isinstance(annotation, dict):
        return MapAnnotation(annotation)
    if isinstance(annotation, str):
        return symbol_by_name(annotation)()
    if not hasattr(annotation, "annotate") and not hasattr(annotation, "annotate_any"):
        raise BadAnnotation(
            "task_annotations takes a dict of task name: attributes, an import path, an object "
            f"with annotate(task), or a list of them, not {annotation!r}"
        )
    return annotation


def resolve_all(annotations: list[Any], task: Any) -> Iterator[dict[str, Any]]:
    """The attributes to set on ``task``: the first annotation naming it, then the first one
    for every task (applied in this order, so ``'*'`` wins, as in Celery)."""
    named = _first(annotation.annotate(task) for annotation in annotations if hasattr(annotation, "annotate"))
    anything = _first(
        annotation.annotate_any() for annotation in annotations if hasattr(annotation, "annotate_any")
    )
    return (found for found in (named, anything) if found)


def _first(values: Iterator[Any]) -> Any:
    return next((value for value in values if value is not None), None)
