"""Celery's ``celery.utils.collections``: ``AttributeDict``, ``DictAttribute`` and ``LimitedSet``."""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

__all__ = ["AttributeDict", "DictAttribute", "LimitedSet"]


class AttributeDict(dict):  # type: ignore[type-arg]
    """A dict whose keys are also attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class DictAttribute(MutableMapping):  # type: ignore[type-arg]
    """An object (a settings module) seen as a mapping: its public attributes are its keys
    (a mapping given is used as it is)."""

    def __init__(self, obj: Any) -> None:
        object.__setattr__(self, "obj", obj)

    def __getitem__(self, key: str) -> Any:
        if isinstance(self.obj, Mapping):
            return self.obj[key]
        try:
            return getattr(self.obj, key)
        except AttributeError:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(self.obj, MutableMapping):
            self.obj[key] = value
        else:
            setattr(self.obj, key, value)

    def __delitem__(self, key: str) -> None:
        if isinstance(self.obj, MutableMapping):
            del self.obj[key]
        else:
            delattr(self.obj, key)

    def __getattr__(self, key: str) -> Any:
        return getattr(object.__getattribute__(self, "obj"), key)

    def __iter__(self) -> Iterator[str]:
        if isinstance(self.obj, Mapping):
            return iter(self.obj)
        return iter(k for k in dir(self.obj) if not k.startswith("_"))

    def __len__(self) -> int:
        return sum(1 for _ in self)


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
