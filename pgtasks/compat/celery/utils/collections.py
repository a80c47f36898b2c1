"""Celery's ``celery.utils.collections``: ``AttributeDict`` and ``LimitedSet``."""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["AttributeDict", "LimitedSet"]


class AttributeDict(dict):  # type: ignore[type-arg]
    """A dict whose keys are also attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class LimitedSet:
    """A set of at most ``maxlen`` items (the oldest go first), Celery's store of revoked ids."""

    def __init__(
        self, maxlen: int = 0, expires: float = 0, data: Iterable[Any] | None = None, minlen: int = 0
    ) -> None:
        self.maxlen, self.expires, self.minlen = maxlen, expires, minlen
        self._data: OrderedDict[Any, float] = OrderedDict()
        self.update(data or ())

    def add(self, item: Any, now: float | None = None) -> None:
        self._data.pop(item, None)
        self._data[item] = now if now is not None else dt.datetime.now().timestamp()
        self.purge()

    def update(self, other: Iterable[Any]) -> None:
        for item in other:
            self.add(item)

    def discard(self, item: Any) -> None:
        self._data.pop(item, None)

    pop_value = discard

    def purge(self, now: float | None = None) -> None:
        while self.maxlen and len(self._data) > max(self.maxlen, self.minlen):
            self._data.popitem(last=False)
        if self.expires:
            moment = now if now is not None else dt.datetime.now().timestamp()
            for item, added in list(self._data.items()):
                if len(self._data) <= self.minlen or moment - added <= self.expires:
                    break
                del self._data[item]

    def clear(self) -> None:
        self._data.clear()

    def as_dict(self) -> dict[Any, float]:
        return dict(self._data)

    def __contains__(self, item: object) -> bool:
        return item in self._data

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)
