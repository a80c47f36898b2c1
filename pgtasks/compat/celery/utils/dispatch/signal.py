"""Celery's ``celery.utils.dispatch.signal``: :class:`Signal`, a named event that receivers
connect to (``signal.connect(receiver, sender=None, weak=True, dispatch_uid=None)`` or as a
decorator). ``send`` calls each receiver with ``signal=``, ``sender=`` and the named arguments;
a receiver that raises is logged and its exception returned as its response, so one faulty
receiver cannot break a task."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["Signal"]

log = logging.getLogger("pgtasks.compat.signals")

Receiver = Callable[..., Any]


def _key(obj: Any) -> Any:
    """A receiver's identity: bound methods by (object, function), else the object."""
    if hasattr(obj, "__self__") and hasattr(obj, "__func__"):
        return (id(obj.__self__), id(obj.__func__))
    return id(obj)


class Signal:
    """A named signal that receivers connect to."""

    def __init__(
        self, name: str | None = None, providing_args: Any = None, use_caching: bool = False
    ) -> None:
        self.name = name
        self.providing_args = set(providing_args or ())
        self._receivers: list[tuple[Any, Any, Callable[[], Receiver | None]]] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Signal: {self.name}>"

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        """Connect a receiver; without a receiver, return a decorator that connects one."""
        if args and callable(args[0]):
            return self._connect(args[0], **kwargs)

        def decorate(fun: Receiver) -> Receiver:
            return self._connect(fun, **kwargs)

        return decorate

    def _connect(
        self, receiver: Receiver, sender: Any = None, weak: bool = True, dispatch_uid: Any = None, **_: Any
    ) -> Receiver:
        lookup = (dispatch_uid if dispatch_uid is not None else _key(receiver), _sender_key(sender))
        ref: Callable[[], Receiver | None]
        if weak:
            if hasattr(receiver, "__self__") and hasattr(receiver, "__func__"):
                ref = weakref.WeakMethod(receiver)
            else:
                try:
                    ref = weakref.ref(receiver)
                except TypeError:
                    ref = _strong(receiver)
        else:
            ref = _strong(receiver)
        with self._lock:
            if not any(existing == lookup for existing, _, _ in self._receivers):
                self._receivers.append((lookup, sender, ref))
        return receiver

    def disconnect(
        self,
        receiver: Receiver | None = None,
        sender: Any = None,
        weak: bool = True,
        dispatch_uid: Any = None,
    ) -> bool:
        """Disconnect a receiver (by itself or its ``dispatch_uid``); True if one was."""
        lookup = (dispatch_uid if dispatch_uid is not None else _key(receiver), _sender_key(sender))
        with self._lock:
            before = len(self._receivers)
            self._receivers = [r for r in self._receivers if r[0] != lookup]
            return len(self._receivers) != before

    @property
    def receivers(self) -> list[Receiver]:
        """The live receivers, in connection order."""
        with self._lock:
            entries = list(self._receivers)
        return [fun for _, _, ref in entries if (fun := ref()) is not None]

    @property
    def connected(self) -> bool:
        """Whether any receiver was connected (and not disconnected): a lock-free check for
        senders on a hot path, which then send (a receiver gone with its weak reference is
        skipped there)."""
        return bool(self._receivers)

    def has_listeners(self, sender: Any = None) -> bool:
        return bool(self._live(sender))

    def _live(self, sender: Any) -> list[Receiver]:
        with self._lock:
            self._receivers = [r for r in self._receivers if r[2]() is not None]
            entries = list(self._receivers)
        out = []
        for _, wanted, ref in entries:
            if wanted is None or wanted is sender or _matches(wanted, sender):
                fun = ref()
                if fun is not None:
                    out.append(fun)
        return out

    def send(self, sender: Any, **named: Any) -> list[tuple[Receiver, Any]]:
        """Call every receiver for ``sender``; return ``[(receiver, response), ...]``."""
        responses = []
        for receiver in self._live(sender):
            try:
                response = receiver(signal=self, sender=sender, **named)
            except Exception as exc:
                log.exception("Signal handler %r raised: %r", receiver, exc)
                response = exc
            responses.append((receiver, response))
        return responses

    send_robust = send

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.connect(*args, **kwargs)


def _strong(receiver: Receiver) -> Callable[[], Receiver]:
    return lambda: receiver


def _sender_key(sender: Any) -> Any:
    return None if sender is None else (sender if isinstance(sender, str) else id(sender))


def _matches(wanted: Any, sender: Any) -> bool:
    """Celery's senders: a task object, or a task name string for the publish signals; a
    receiver connected with a task also hears sends whose sender is that task's name."""
    if isinstance(wanted, str):
        return wanted == sender or getattr(sender, "name", None) == wanted
    return isinstance(sender, str) and getattr(wanted, "name", None) == sender
