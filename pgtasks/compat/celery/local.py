"""``celery.current_app`` and ``celery.current_task``: objects that stand for whatever is
current when they are used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Proxy:
    """Forwards attribute access, calls, comparison and truth to ``target()``."""

    __slots__ = ("_target",)

    def __init__(self, target: Callable[[], Any]) -> None:
        object.__setattr__(self, "_target", target)

    def _get_current_object(self) -> Any:
        return object.__getattribute__(self, "_target")()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get_current_object(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._get_current_object(), name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._get_current_object()(*args, **kwargs)

    def __bool__(self) -> bool:
        return bool(self._get_current_object())

    def __eq__(self, other: object) -> bool:
        return bool(self._get_current_object() == other)

    def __hash__(self) -> int:
        return hash(self._get_current_object())

    def __repr__(self) -> str:
        return repr(self._get_current_object())
