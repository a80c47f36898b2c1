"""Celery's ``celery.contrib.testing.mocks``: stand-ins for a task message and for a context
manager, for a project's unit tests of code that reads a message (a worker ``Request`` built
from one, a signal handler, a routing function).

pgtasks sends no messages: these build the message Celery would send, as a
``unittest.mock.Mock`` holding its ``headers``, ``payload``, ``body`` (JSON) and content type,
without sending anything.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast
from unittest.mock import Mock

from pgtasks.compat.kombu.utils.json import dumps
from pgtasks.compat.kombu.utils.uuid import uuid

__all__ = ["ContextMock", "TaskMessage", "TaskMessage1", "task_message_from_sig"]

JSON = "application/json"


def _message(id: str, headers: dict[str, Any], payload: Any) -> Mock:
    message = Mock(name=f"TaskMessage-{id}")
    message.headers = headers
    message.payload = payload
    message.body = dumps(payload)
    message.content_type, message.content_encoding = JSON, "utf-8"
    return message


def TaskMessage(
    name: str,
    id: str | None = None,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    callbacks: Sequence[Any] | None = None,
    errbacks: Sequence[Any] | None = None,
    chain: Sequence[Any] | None = None,
    shadow: str | None = None,
    utc: bool | None = None,
    **options: Any,
) -> Mock:
    """A message of Celery's task protocol 2: ``headers`` (``id``, ``task``, ``shadow`` and
    ``options``), ``payload`` ``(args, kwargs, embed)`` and its JSON ``body``."""
    id = id or uuid()
    embed = {"callbacks": callbacks, "errbacks": errbacks, "chain": chain}
    headers = {"id": id, "task": name, "shadow": shadow, **options}
    return _message(id, headers, (args, dict(kwargs or {}), embed))


def TaskMessage1(
    name: str,
    id: str | None = None,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    **options: Any,
) -> Mock:
    """A message of Celery's task protocol 1: no headers, everything in the ``payload`` dict
    (``callbacks`` and ``errbacks`` there too, None when not given; protocol 1 has no
    ``chain``: it is dropped)."""
    id = id or uuid()
    options.pop("chain", None)
    links = {"callbacks": options.pop("callbacks", None), "errbacks": options.pop("errbacks", None)}
    payload = {"task": name, "id": id, "args": args, "kwargs": dict(kwargs or {}), **links, **options}
    return _message(id, {}, payload)


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def task_message_from_sig(app: Any, sig: Any, utc: bool = True, TaskMessage: Any = TaskMessage) -> Any:
    """The message ``sig`` (a signature, frozen here) would be sent as: its links as
    ``callbacks``/``errbacks``, ``countdown`` as an ``eta`` from ``app.now()``, ``eta`` and
    ``expires`` (seconds from now, or a datetime) in ISO 8601, its other options as headers."""
    sig.freeze()
    options = sig.options
    callbacks, errbacks = options.pop("link", None), options.pop("link_error", None)
    countdown = options.pop("countdown", None)
    eta = app.now() + timedelta(seconds=countdown) if countdown else options.pop("eta", None)
    expires = options.pop("expires", None)
    if isinstance(expires, numbers.Real) and expires:
        expires = app.now() + timedelta(seconds=float(expires))
    return TaskMessage(
        sig.task,
        id=sig.id,
        args=sig.args,
        kwargs=sig.kwargs,
        callbacks=[dict(s) for s in callbacks] if callbacks else None,
        errbacks=[dict(s) for s in errbacks] if errbacks else None,
        eta=_iso(eta),
        expires=_iso(expires),
        utc=utc,
        **options,
    )


class _ContextMock(Mock):
    """A Mock usable in a ``with`` statement (the protocol is looked up on the class)."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        return None


def ContextMock(*args: Any, **kwargs: Any) -> Mock:
    """A Mock that is its own context manager, recording its ``__enter__``/``__exit__`` calls;
    ``__exit__`` returns None, so an exception in the block is not swallowed."""
    mock = _ContextMock(*args, **kwargs)
    mock.attach_mock(_ContextMock(), "__enter__")
    mock.attach_mock(_ContextMock(), "__exit__")
    cast(Mock, mock.__enter__).return_value = mock
    cast(Mock, mock.__exit__).return_value = None
    return mock
