"""``@app.task(pydantic=True)`` (Celery 5.5+): arguments annotated with a pydantic model are
validated into that model before the body runs, and a returned model that matches the return
annotation is dumped with ``model_dump()`` (``mode='json'`` unless ``pydantic_dump_kwargs``
says otherwise). ``Optional[Model]`` is handled; unions and generics (``list[Model]``) are
not, as in Celery.

pydantic is not a dependency of pgtasks: it is imported only when a task asks for it, and a
task that does without pydantic installed is refused when it is declared.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from pgtasks.compat.celery.exceptions import ImproperlyConfigured

PYDANTIC_OPTIONS = ("pydantic", "pydantic_strict", "pydantic_context", "pydantic_dump_kwargs")


def _optional_arg(annotation: Any) -> Any:
    """``X`` for ``Optional[X]`` / ``X | None``; None for any other annotation."""
    origin = typing.get_origin(annotation)
    if origin is not typing.Union and origin is not types.UnionType:
        return None
    members = typing.get_args(annotation)
    if len(members) != 2 or type(None) not in members:
        return None
    return next(m for m in members if m is not type(None))


def _is_model(annotation: Any, base: Any) -> bool:
    return (
        inspect.isclass(annotation)
        and not isinstance(annotation, types.GenericAlias)
        and issubclass(annotation, base)
    )


def _type_hints(fun: Callable[..., Any]) -> dict[str, Any]:
    """The resolved annotations of ``fun`` (string annotations too); the raw ones when they
    cannot be resolved (a name only defined under TYPE_CHECKING)."""
    try:
        return typing.get_type_hints(fun)
    except (NameError, AttributeError, TypeError):
        return {}


def pydantic_options(options: dict[str, Any]) -> dict[str, Any]:
    """Take the pydantic options out of a task's decorator options; refuse wrong types."""
    found = {key: options.pop(key) for key in PYDANTIC_OPTIONS if key in options}
    for key in ("pydantic_context", "pydantic_dump_kwargs"):
        if found.get(key) is not None and not isinstance(found[key], dict):
            raise TypeError(f"{key} must be a dict, not {type(found[key]).__name__}")
    return found


def with_pydantic(
    fun: Callable[..., Any],
    app_of: Callable[[], Any],
    name: str,
    strict: bool = False,
    context: dict[str, Any] | None = None,
    dump_kwargs: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """``fun`` wrapped to validate its model arguments and dump its model result (see the
    module docstring). The validation context holds ``celery_app`` (``app_of()``: a shared
    task's is the current app) and ``celery_task_name`` besides ``context``."""
    try:
        pydantic = importlib.import_module("pydantic")
    except ModuleNotFoundError as exc:
        raise ImproperlyConfigured(
            f"task {name!r} is declared with pydantic=True, but pydantic is not installed: "
            "pip install 'pydantic>=2' (pgtasks does not depend on it)"
        ) from exc
    base: Any = pydantic.BaseModel
    dump = {"mode": "json", **(dump_kwargs or {})}
    params = inspect.signature(fun)
    hints = _type_hints(fun)

    def annotation_of(arg: str) -> Any:
        return hints[arg] if arg in hints else params.parameters[arg].annotation

    returns = hints.get("return", params.return_annotation)
    returns = _optional_arg(returns) or returns

    @functools.wraps(fun)
    def validating(*args: Any, **kwargs: Any) -> Any:
        bound = params.bind(*args, **kwargs)
        for arg, value in bound.arguments.items():
            annotation = annotation_of(arg)
            inner = _optional_arg(annotation)
            if inner is not None:
                if value is None:
                    continue
                annotation = inner
            if _is_model(annotation, base):
                bound.arguments[arg] = annotation.model_validate(
                    value,
                    strict=strict,
                    context={**(context or {}), "celery_app": app_of(), "celery_task_name": name},
                )
        result: Any = fun(*bound.args, **bound.kwargs)
        if isinstance(result, base) and inspect.isclass(returns) and isinstance(result, returns):
            dumped: Any = result
            return dumped.model_dump(**dump)
        return result

    return validating
