"""Sending tasks by name: the one path behind ``Client.enqueue``, ``App.send_task`` and
``Task.apply_async``, and the bulk path behind ``Task.map_enqueue``."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pgtasks.engine.options import EnqueueRequest, SendOptions
from pgtasks.result import AsyncResult

if TYPE_CHECKING:
    from pgtasks.engine.core import Engine


def send(
    engine: Engine,
    name: str,
    args: Sequence[Any] | None,
    kwargs: dict[str, Any] | None,
    options: SendOptions,
) -> AsyncResult:
    """Insert one task ``name`` and return its handle."""
    [sent] = engine.enqueue(
        [options.request(name, args, kwargs)], conn=options.conn, on_duplicate=options.on_duplicate
    )
    return AsyncResult(sent, engine)


async def send_async(
    engine: Engine,
    name: str,
    args: Sequence[Any] | None,
    kwargs: dict[str, Any] | None,
    options: SendOptions,
) -> AsyncResult:
    """:func:`send` without blocking the event loop (``options.conn`` may be a
    ``psycopg.AsyncConnection``: the insert joins its transaction)."""
    request = options.request(name, args, kwargs)
    [sent] = await engine.enqueue_async([request], conn=options.conn, on_duplicate=options.on_duplicate)
    return AsyncResult(sent, engine)


def send_many(
    engine: Engine,
    name: str,
    arg_lists: Sequence[Sequence[Any]],
    task_ids: Sequence[str] | None,
    options: SendOptions,
) -> list[AsyncResult]:
    """Insert one task ``name`` per argument list, in one statement, all with ``options``
    (``task_ids``: one per task, or None for new ids)."""
    _check_arg_lists(name, arg_lists)
    if task_ids is None and options.task_id is None:  # no request per task (see enqueue_many)
        sent = engine.enqueue_many(
            name, arg_lists, options, conn=options.conn, on_duplicate=options.on_duplicate
        )
    else:
        requests = _many(name, arg_lists, task_ids, options)
        sent = engine.enqueue(requests, conn=options.conn, on_duplicate=options.on_duplicate)
    return [AsyncResult(task_id, engine) for task_id in sent]


async def send_many_async(
    engine: Engine,
    name: str,
    arg_lists: Sequence[Sequence[Any]],
    task_ids: Sequence[str] | None,
    options: SendOptions,
) -> list[AsyncResult]:
    """:func:`send_many` without blocking the event loop."""
    _check_arg_lists(name, arg_lists)
    requests = _many(name, arg_lists, task_ids, options)
    sent = await engine.enqueue_async(requests, conn=options.conn, on_duplicate=options.on_duplicate)
    return [AsyncResult(task_id, engine) for task_id in sent]


def _many(
    name: str, arg_lists: Sequence[Sequence[Any]], task_ids: Sequence[str] | None, options: SendOptions
) -> list[EnqueueRequest]:
    if options.task_id is not None:
        raise ValueError("map_enqueue takes task_ids=[...], one per task, not task_id")
    if task_ids is not None and len(task_ids) != len(arg_lists):
        raise ValueError(f"map_enqueue got {len(task_ids)} task_ids for {len(arg_lists)} tasks")
    if task_ids is not None and len(set(task_ids)) != len(task_ids):
        twice = next(i for i, n in collections.Counter(task_ids).items() if n > 1)
        # the second would be taken for the first (an existing id is not sent again): lost
        raise ValueError(f"map_enqueue got the task id {twice!r} twice; each task needs its own")
    if task_ids is None:  # one options object for every task: checked once (build_new_task)
        return [options.request(name, args) for args in arg_lists]
    return [
        dataclasses.replace(options, task_id=task_id).request(name, args)
        for args, task_id in zip(arg_lists, task_ids, strict=True)
    ]


def _check_arg_lists(name: str, arg_lists: Any) -> None:
    """TypeError naming the task unless ``arg_lists`` is a list (or tuple) of argument lists
    (a string is no list of arguments: it was read one argument a letter)."""
    if not _is_list(arg_lists):
        raise TypeError(
            f"map_enqueue of task {name!r} takes a list of argument lists, not {type(arg_lists).__name__}"
        )
    for index, args in enumerate(arg_lists):
        # the common kinds first: isinstance against Sequence costs ~3x more on a bulk send
        if args is not None and type(args) is not list and type(args) is not tuple and not _is_list(args):
            raise TypeError(
                f"map_enqueue of task {name!r}: argument list {index} must be a list or tuple, "
                f"not {type(args).__name__}"
            )


def _is_list(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


class Sending:
    """Mixed into App and Client: sending a task by name."""

    engine: Engine

    def enqueue(
        self,
        name: str,
        args: Sequence[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """Send the task ``name`` (it need not be registered in this process) and return its
        handle; ``options`` are those of :class:`~pgtasks.engine.options.SendOptions` (an
        unknown one raises ConfigurationError)."""
        return send(self.engine, name, args, kwargs, SendOptions.from_kwargs(**options))

    async def enqueue_async(
        self,
        name: str,
        args: Sequence[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """:meth:`enqueue` for async code: awaiting it never blocks the event loop, and
        ``conn=`` may be the caller's ``psycopg.AsyncConnection`` (the task is inserted in its
        transaction, so it exists only if that transaction commits)."""
        return await send_async(self.engine, name, args, kwargs, SendOptions.from_kwargs(**options))
