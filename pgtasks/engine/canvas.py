"""Workflows of tasks in the engine: a canvas inserted in one transaction, and the resolver that
turns a parent's outcome into its children's arguments (see ``pgtasks/sysdb/links.py``).

A canvas is a list of task requests, the ids among them that wait (they run when their
parents allow), and the links between them. The compatibility layer builds canvases from
Celery's chain, group and chord; the engine only knows links.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pgtasks.engine import tracing
from pgtasks.engine.crashpoints import crashpoint
from pgtasks.engine.errors import ChordError, ConfigurationError, TaskCancelled, TaskError
from pgtasks.engine.failures import encode_exception, error_repr, error_type
from pgtasks.engine.options import EnqueueRequest, build_new_task
from pgtasks.engine.serialization import Codec
from pgtasks.sysdb.records import CanvasEnqueue, ChordHeaderClose, LinkKind, TaskLink

if TYPE_CHECKING:
    from pgtasks.engine.runtime import Runtime


class CanvasLinks:
    """The engine's :class:`~pgtasks.sysdb.records.LinkResolver`: deserializes a child's
    arguments, puts the parent's result (or results, or id) first, and serializes them back
    in the child's own serialization. ``chord_error`` is the exception type stored on a chord
    body whose header failed, ``revoked_error`` the one a revoked header task is named by
    (the engine's, fixed when the engine is built)."""

    def __init__(
        self,
        codec: Codec,
        chord_error: type[BaseException] = ChordError,
        revoked_error: type[BaseException] = TaskCancelled,
    ) -> None:
        self.codec = codec
        self.chord_error = chord_error
        self._chord_error_type = error_type(encode_exception(chord_error("")))
        self.revoked = revoked_error

    def with_result(self, child: tuple[str, str], result: tuple[str, str | None]) -> tuple[str, str]:
        return self._prepend(child, self._value(result))

    def with_results(self, child: tuple[str, str], results: list[tuple[str, str | None]]) -> tuple[str, str]:
        return self._prepend(child, [self._value(r) for r in results])

    def with_task_id(self, child: tuple[str, str], task_id: str) -> tuple[str, str]:
        return self._prepend(child, task_id)

    def dependency_error(self, parent_id: str, parent_error: str | None, kind: LinkKind) -> str:
        if kind is LinkKind.CHORD:
            if parent_error and error_type(parent_error) == self._chord_error_type:
                return parent_error  # a chord after a failed chord: Celery names the first culprit
            reason = error_repr(parent_error) or "failed"  # as Celery: ValueError('x')
            return encode_exception(self.chord_error(f"Dependency {parent_id} raised {reason}"))
        # A chain: the following tasks carry the failure of the task that stopped it, so that
        # waiting on the chain's last result raises what went wrong.
        return parent_error or encode_exception(TaskError("ChainError", f"task {parent_id} failed"))

    def failure(self, exc: BaseException) -> str:
        return encode_exception(exc)

    def revoked_error(self, expired: bool) -> str:
        return encode_exception(self.revoked("expired" if expired else "revoked"))

    def as_output(self, result: tuple[str, str | None], tag: str) -> str | None:
        if result[1] is None or result[0] == tag:
            return result[1]
        return self.codec.dumps(self._value(result), "the result of a replacement", tag)[1]

    def _value(self, result: tuple[str, str | None]) -> Any:
        tag, text = result
        return None if text is None else self.codec.loads(tag, text, "the result passed on")

    def _prepend(self, child: tuple[str, str], value: Any) -> tuple[str, str]:
        tag, text = child
        args, kwargs = self.codec.loads_inputs(tag, text, "linked task")
        return self.codec.dumps({"args": [value, *args], "kwargs": kwargs}, "linked task's arguments", tag)


def enqueue_canvas(
    engine: Runtime,
    requests: list[EnqueueRequest],
    waiting: frozenset[str] = frozenset(),
    links: tuple[TaskLink, ...] = (),
    meta: Mapping[str, str] | None = None,
    replacing: tuple[str, str, str | None] | None = None,
    stored: frozenset[str] = frozenset(),
    joining: tuple[str, str] | None = None,
) -> list[str]:
    """Insert every task of a canvas in one transaction; return their ids in order.

    Every request needs its ``task_id`` (links name them). Tasks in ``waiting`` are not run
    until their links release them; the others are queued as usual. ``replacing`` (task id,
    executor id, claim token) names the running task this canvas replaces: it waits, from
    the same transaction, for its ``replace`` link, and is the parent of the tasks that start
    at once. ``stored``: ids outside this canvas its links may name (tasks stored before, a
    chord header's group id). ``joining`` (header task id, task id of this canvas): that task
    becomes one more header task of every chord the running header task counts towards
    (``add_to_chord``); NotInChord if it counts towards none."""
    ids = [r.options.task_id for r in requests]
    if any(i is None for i in ids) or len(set(ids)) != len(ids):
        raise ConfigurationError("every task of a canvas needs its own task_id")
    if joining is not None and joining[1] not in ids:
        raise ConfigurationError(f"the task joining a chord is not in the canvas: {joining[1]}")
    known = set(ids) | set(stored) | ({replacing[0]} if replacing is not None else set())
    for link in links:
        if link.child_id not in known or (link.kind is not LinkKind.GROUP and link.parent_id not in known):
            raise ConfigurationError(f"a link names a task outside the canvas: {link}")
    settings = engine.settings
    # A replacement's first tasks are the replaced task's children, as if it had sent them.
    sender = replacing[0] if replacing is not None else None
    meta = meta or {}
    with tracing.sending([r.name for r in requests]) as stamp:
        tasks = tuple(
            stamp(
                build_new_task(
                    request,
                    engine.codec,
                    settings.default_queue,
                    settings.max_recovery_attempts,
                    None if request.options.task_id in waiting else sender,
                    max_payload_bytes=settings.max_payload_bytes,
                )._replace(meta=meta.get(str(request.options.task_id)))
            )
            for request in requests
        )
        params = CanvasEnqueue(
            tasks, frozenset(waiting), tuple(links), replacing, joining, engine.link_resolver()
        )
        inserted = [r.task_id for r in engine.database.sysdb.tasks_enqueue_canvas(params)]
    if replacing is not None:
        crashpoint("after_replace_commit", task_id=replacing[0])
    return inserted


def close_chord_header(engine: Runtime, group_id: str, bodies: tuple[str, ...]) -> list[str]:
    """The header of a chord sent task by task is complete (see ``links.py``); return the
    bodies this started."""
    params = ChordHeaderClose(group_id, tuple(bodies), engine.link_resolver())
    return engine.database.sysdb.chord_header_close(params)
