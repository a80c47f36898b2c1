"""Canvas links, written once for both dialects: chains, chords and error callbacks resolved
in the transaction that writes each parent's outcome.

A canvas is inserted in one transaction (``tasks_enqueue_canvas``): the tasks that wait for
others are WAITING, which no claim looks at, and ``task_links`` says whom each waits for.
When a parent with links ends, its outcome and every consequence are committed together:

- success: a chain child gets the result as its first argument and becomes ENQUEUED; a chord
  child records the result in its link and becomes ENQUEUED with the list of results once
  the last of its parents succeeded; an errback child is CANCELLED (it will never be needed);
- failure: chain and chord children (and, in turn, theirs) end ERROR with the engine's
  dependency error, so nothing waits forever; an errback child becomes ENQUEUED with the
  failed parent's id as its first argument.

Racing chord parents serialise on the child's row (``FOR UPDATE`` on PostgreSQL; SQLite has
one writer at a time): the second one to commit counts the first one's link as done. A
worker that dies before its outcome commits leaves the links untouched; the task is
recovered and its outcome, when it comes, resolves them: nothing is lost between two links.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

from pgtasks.sysdb.records import (
    CanvasEnqueue,
    CompleteParams,
    EnqueueResult,
    LinkKind,
    LinkResolver,
    NewTask,
    Outcome,
    Status,
)

FINAL = (Status.SUCCESS, Status.ERROR)
# What building a child's arguments may raise (a result the child's serializer cannot carry,
# a stored value this process does not accept); anything else is a bug and fails the write.
SerializationFailure = (ValueError, TypeError)


class LinkStore:
    """``tasks_enqueue_canvas``, ``group_members``, ``task_children``, the link side of
    ``tasks_complete``, and the events a running task publishes (``workflow_events``); a
    dialect supplies the hooks below."""

    sql: dict[str, str]

    # -- the dialect's hooks ------------------------------------------------------------
    def _write_tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _read_rows(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _enqueue_on(self, conn: Any, tasks: list[NewTask]) -> list[EnqueueResult]:
        raise NotImplementedError

    def _text_list(self, values: list[str]) -> Any:
        raise NotImplementedError

    def _complete_on(self, conn: Any, params: CompleteParams) -> list[str]:
        """Write the outcomes on ``conn`` (the statement of ``tasks_complete``)."""
        raise NotImplementedError

    def _complete_plain(self, params: CompleteParams) -> list[str]:
        """``tasks_complete`` without links: the dialect's fast path."""
        raise NotImplementedError

    def _announce_on(self, conn: Any, queue: str) -> None:
        """Wake workers of ``queue`` once ``conn``'s transaction commits (no-op on SQLite)."""

    # -- enqueue ------------------------------------------------------------------------
    def tasks_enqueue_canvas(self, params: CanvasEnqueue) -> list[EnqueueResult]:
        with self._write_tx() as conn:
            results = self._enqueue_on(conn, list(params.tasks))
            inserted = {r.task_id for r in results if r.inserted}
            cur = conn.cursor()
            waiting = [{"id": i} for i in sorted(params.waiting & inserted)]
            if waiting:
                cur.executemany(self.sql["task_set_waiting"], waiting)
            meta = [{"id": i, "meta": m} for i, m in sorted(params.meta.items()) if i in inserted]
            if meta:
                cur.executemany(self.sql["task_set_meta"], meta)
            if params.links:
                cur.executemany(
                    self.sql["link_insert"],
                    [
                        {
                            "parent": link.parent_id,
                            "child": link.child_id,
                            "kind": str(link.kind),
                            "position": link.position,
                            "prepend": link.prepend,
                        }
                        for link in params.links
                    ],
                )
                parents = {link.parent_id for link in params.links if link.kind is not LinkKind.GROUP}
                cur.executemany(self.sql["task_set_has_links"], [{"id": p} for p in sorted(parents)])
        return results

    def group_members(self, group_id: str) -> list[str]:
        return [r["child_uuid"] for r in self._read_rows("group_members", {"group": group_id})]

    def task_children(self, task_id: str) -> list[str]:
        return [r["child_uuid"] for r in self._read_rows("task_children", {"id": task_id})]

    # -- events (values a running task publishes) --------------------------------------
    def task_event_set(self, task_id: str, key: str, value: str, serialization: str) -> bool:
        args = {"id": task_id, "key": key, "value": value, "tag": serialization}
        with self._write_tx() as conn:
            return conn.execute(self.sql["task_event_set"], args).fetchone() is not None

    def tasks_to_terminate(self, task_ids: list[str]) -> list[str]:
        if not task_ids:
            return []
        rows = self._read_rows("tasks_to_terminate", {"ids": self._text_list(sorted(task_ids))})
        return [r["workflow_uuid"] for r in rows]

    def task_event_get(self, task_id: str, key: str) -> tuple[str, str] | None:
        rows = self._read_rows("task_event_get", {"id": task_id, "key": key})
        return (rows[0]["serialization"], rows[0]["value"]) if rows else None

    # -- completion ---------------------------------------------------------------------
    def tasks_complete(self, params: CompleteParams) -> list[str]:
        linked = [o for o in params.outcomes if o.has_links]
        if params.links is None or not linked:
            return self._complete_plain(params)
        with self._write_tx() as conn:
            written = self._complete_on(conn, params)
            done = set(written)
            final = [o for o in linked if o.task_id in done and o.status in FINAL and o.retry_in_ms is None]
            if final:
                self._resolve(conn, final, params.links)
        return written

    def _resolve(self, conn: Any, outcomes: Iterable[Outcome], links: LinkResolver) -> None:
        # Work list of (parent id, status, serialized output, error); failures cascade.
        pending: deque[tuple[str, Status, str | None, str | None]] = deque(
            (o.task_id, o.status, o.output, o.error) for o in outcomes
        )
        while pending:
            parent, status, output, error = pending.popleft()
            for link in conn.execute(self.sql["links_of_parent"], {"id": parent}).fetchall():
                child, kind, prepend = link["child_uuid"], LinkKind(link["kind"]), bool(link["prepend"])
                tag = link["serialization"]  # the parent's: its output is written in it
                row = conn.execute(self.sql["task_lock"], {"id": child}).fetchone()
                if row is None or row["status"] != Status.WAITING.value:
                    continue  # cancelled (revoked), or resolved already
                inputs = (row["serialization"], row["inputs"])
                failure = None
                try:
                    if status is Status.SUCCESS and kind is LinkKind.ERRBACK:
                        self._end(conn, child, Status.CANCELLED, None)
                    elif status is Status.SUCCESS and kind is LinkKind.CHAIN:
                        new = links.with_result(inputs, (tag, output)) if prepend else inputs
                        self._activate(conn, child, new)
                    elif status is Status.SUCCESS:
                        self._chord_part_done(conn, parent, child, (tag, output), inputs, prepend, links)
                    elif kind is LinkKind.ERRBACK:
                        new = links.with_task_id(inputs, parent) if prepend else inputs
                        self._activate(conn, child, new)
                    else:
                        failure = links.dependency_error(parent, error, kind)
                except SerializationFailure as exc:  # a result the child cannot take: it fails
                    failure = links.failure(exc)
                if failure is not None and self._end(conn, child, Status.ERROR, failure):
                    pending.append((child, Status.ERROR, None, failure))

    def _end(self, conn: Any, task_id: str, status: Status, error: str | None) -> bool:
        """End a WAITING task that will never run; True if it has links of its own."""
        args = {"id": task_id, "status": str(status), "error": error}
        ended = conn.execute(self.sql["task_end_waiting"], args).fetchone()
        return ended is not None and bool(ended["has_links"])

    def _chord_part_done(
        self,
        conn: Any,
        parent: str,
        child: str,
        result: tuple[str, str | None],
        inputs: tuple[str, str],
        prepend: bool,
        links: LinkResolver,
    ) -> None:
        args = {"parent": parent, "child": child, "kind": "chord", "result": result[1], "tag": result[0]}
        conn.execute(self.sql["link_done"], args)
        if conn.execute(self.sql["chord_waiting"], {"child": child}).fetchone()["waiting"]:
            return
        rows = conn.execute(self.sql["chord_results"], {"child": child}).fetchall()
        results = [(r["result_serialization"] or "json", r["result"]) for r in rows]
        self._activate(conn, child, links.with_results(inputs, results) if prepend else inputs)

    def _activate(self, conn: Any, child: str, inputs: tuple[str, str]) -> None:
        args = {"id": child, "tag": inputs[0], "inputs": inputs[1]}
        row = conn.execute(self.sql["task_activate"], args).fetchone()
        if row is not None and row["status"] == Status.ENQUEUED.value:
            self._announce_on(conn, row["queue_name"])
