"""Celery's ``celery.utils.functional``: small helpers over callables and iterables."""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = [
    "chunks",
    "dictfilter",
    "first",
    "firstmethod",
    "fun_accepts_kwargs",
    "is_list",
    "lazy",
    "mattrgetter",
    "maybe",
    "maybe_evaluate",
    "maybe_list",
    "memoize",
    "noop",
    "padlist",
    "regen",
    "uniq",
]


def noop(*args: Any, **kwargs: Any) -> None:
    """Take anything, do nothing."""


def first(predicate: Any, iterable: Iterable[Any]) -> Any:
    """The first item the predicate accepts (any true item when it is None), else None."""
    for item in iterable:
        if (predicate or bool)(item):
            return item
    return None


def is_list(obj: Any, scalars: tuple[type, ...] = (dict, str, bytes)) -> bool:
    """True for an iterable that is not a mapping or a string."""
    return isinstance(obj, Iterable) and not isinstance(obj, scalars)


def maybe_list(obj: Any, scalars: tuple[type, ...] = (dict, str, bytes)) -> Any:
    """``obj`` in a list unless it is one already (None stays None)."""
    return obj if obj is None or is_list(obj, scalars) else [obj]


def chunks(it: Iterable[Any], n: int) -> Iterator[list[Any]]:
    """Lists of ``n`` items of ``it`` (the last one shorter)."""
    batch: list[Any] = []
    for item in it:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


class _Regen(Sequence[Any]):
    """A list read from a generator as far as it is read, then kept (iterable again)."""

    def __init__(self, it: Iterable[Any]) -> None:
        self._it: Iterator[Any] | None = iter(it)
        self._done: list[Any] = []

    def _fill(self, upto: int | None) -> None:
        while self._it is not None and (upto is None or len(self._done) <= upto):
            try:
                self._done.append(next(self._it))
            except StopIteration:
                self._it = None

    def __iter__(self) -> Iterator[Any]:
        position = 0
        while True:
            self._fill(position)
            if position >= len(self._done):
                return
            yield self._done[position]
            position += 1

    def __getitem__(self, index: Any) -> Any:
        self._fill(None if isinstance(index, slice) or index < 0 else index)
        return self._done[index]

    def __len__(self) -> int:
        self._fill(None)
        return len(self._done)

    def __bool__(self) -> bool:
        self._fill(0)
        return bool(self._done)

    def __repr__(self) -> str:
        return repr(list(self))


def regen(it: Iterable[Any]) -> Any:
    """``it`` itself if it is a list or tuple, else a list that reads the generator lazily and
    keeps what it read (so it can be iterated more than once)."""
    return it if isinstance(it, (list, tuple)) else _Regen(it)


def memoize(
    maxsize: int | None = None,
    keyfun: Callable[[tuple[Any, ...], dict[str, Any]], Any] | None = None,
    Cache: Any = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator caching the results of a function by its arguments (``keyfun(args,
    kwargs)`` when given), the ``maxsize`` most recently used; ``fun.clear()`` empties it.
    ``Cache`` (Celery's cache class) is accepted; the cache is always this LRU dict."""

    def decorate(fun: Callable[..., Any]) -> Callable[..., Any]:
        cache: OrderedDict[Any, Any] = OrderedDict()

        def memoized(*args: Any, **kwargs: Any) -> Any:
            key = keyfun(args, kwargs) if keyfun else (args, tuple(sorted(kwargs.items())))
            if key in cache:
                memoized.hits += 1  # type: ignore[attr-defined]
                cache.move_to_end(key)
                return cache[key]
            memoized.misses += 1  # type: ignore[attr-defined]
            value = cache[key] = fun(*args, **kwargs)
            if maxsize is not None and len(cache) > maxsize:
                cache.popitem(last=False)
            return value

        memoized.hits = memoized.misses = 0  # type: ignore[attr-defined]
        memoized.clear = cache.clear  # type: ignore[attr-defined]
        memoized.__wrapped__ = fun  # type: ignore[attr-defined]
        memoized.__name__ = getattr(fun, "__name__", "memoized")
        memoized.__doc__ = fun.__doc__
        return memoized

    return decorate


def uniq(it: Iterable[Any]) -> Iterator[Any]:
    """The items of ``it`` without repeats, in their first order."""
    seen: set[Any] = set()
    for item in it:
        if item not in seen:
            seen.add(item)
            yield item


def padlist(container: Iterable[Any], minlen: int, default: Any = None) -> list[Any]:
    """The first ``minlen`` items of ``container``, padded with ``default`` to that length."""
    items = list(container)
    return (items + [default] * (minlen - len(items)))[:minlen]


def dictfilter(d: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """``d`` (and ``kw``) without the keys whose value is None."""
    merged = {**(d or {}), **kw}
    return {k: v for k, v in merged.items() if v is not None}


def maybe(typ: Callable[[Any], Any], val: Any) -> Any:
    """``typ(val)``, or None when ``val`` is None."""
    return typ(val) if val is not None else val


def fun_accepts_kwargs(fun: Callable[..., Any]) -> bool:
    """Whether ``fun`` takes any keyword argument (``**kwargs``)."""
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fun).parameters.values())


def mattrgetter(*attrs: str) -> Callable[[Any], dict[str, Any]]:
    """A function giving ``{attr: obj.attr}`` for ``attrs`` (None where missing)."""
    return lambda obj: {attr: getattr(obj, attr, None) for attr in attrs}


def firstmethod(method: str, on_call: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A function calling ``method`` (or ``on_call(that method)``) on each object of a list
    and returning the first result that is not None."""

    def call(it: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
        for obj in it:
            bound = getattr(obj, method, None)
            if bound is None:
                continue
            reply = on_call(bound, *args, **kwargs) if on_call else bound(*args, **kwargs)
            if reply is not None:
                return reply
        return None

    return call


class lazy:
    """``fun(*args, **kwargs)``, called when the lazy object is (``obj()``, ``evaluate()``)."""

    def __init__(self, fun: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._fun, self._args, self._kwargs = fun, args, kwargs

    def __call__(self) -> Any:
        return self.evaluate()

    def evaluate(self) -> Any:
        return self._fun(*self._args, **self._kwargs)

    def __repr__(self) -> str:
        return f"<lazy: {getattr(self._fun, '__name__', self._fun)!s}>"


def maybe_evaluate(value: Any) -> Any:
    """A lazy object's value; anything else as it is."""
    return value.evaluate() if isinstance(value, lazy) else value
