"""Canvas links, written once for both dialects: chains, chords and error callbacks resolved
in the transaction that writes each parent's outcome (``completion.py`` calls :meth:`LinkStore._resolve`).

A canvas is inserted in one transaction (``tasks_enqueue_canvas``): the tasks that wait for
others are WAITING, which no claim looks at, and ``task_links`` says whom each waits for.
When a parent with links ends, its outcome and every consequence are committed together:

- success: a chain child gets the result as its first argument and becomes ENQUEUED; a chord
  child records the result in its link and becomes ENQUEUED with the list of results once
  the last of its parents succeeded; an errback child is CANCELLED (it will never be needed:
  end reason NOT_NEEDED);
- a replaced task (``replace`` link, Celery's ``Task.replace``) ends with its replacement's
  outcome (SUCCESS with its result, or ERROR with its error), and then its own links resolve
  as above: its chain goes on, its chord counts it, its callbacks or errbacks run;
- failure: chain and chord children (and, in turn, theirs) end ERROR with the engine's
  dependency error (end reason DEPENDENCY_FAILED), so nothing waits forever; an errback
  child becomes ENQUEUED with the failed parent's id as its first argument.

A chord whose header comes from a generator is sent task by task: its body waits on an
``open`` chord link held by the group id, which ``chord_header_close`` drops once the
generator is exhausted (starting the body if every header task succeeded already).

Racing chord parents serialise on the child's row (``FOR UPDATE`` on PostgreSQL; SQLite has
one writer at a time): the second one to commit counts the first one's link as done. A
worker that dies before its outcome commits leaves the links untouched; the task is
recovered and its outcome, when it comes, resolves them: nothing is lost between two links.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from pgtasks.sysdb.errors import ConfigurationError, NotInChord
from pgtasks.sysdb.primitives import Primitives
from pgtasks.sysdb.records import (
    CanvasEnqueue,
    ChordHeaderClose,
    EndReason,
    EnqueueResult,
    LinkKind,
    LinkResolver,
    Outcome,
    Status,
    StoredOutcome,
    TaskLinkInfo,
)

# The statuses of a task whose links are resolved (a cancelled one: as revoked).
FINISHED = (Status.SUCCESS.value, Status.ERROR.value, Status.CANCELLED.value)

# What building a child's arguments may raise (a result the child's serializer cannot carry,
# a stored value this process does not accept); anything else is a bug and fails the write.
SerializationFailure = (ValueError, TypeError)


class LinkStore(Primitives):
    """``tasks_enqueue_canvas``, ``group_members``, ``task_children`` (of one task or many),
    and the resolution of a parent's links inside the transaction of its outcome
    (:meth:`_resolve`)."""

    # -- enqueue ------------------------------------------------------------------------
    def tasks_enqueue_canvas(self, params: CanvasEnqueue) -> list[EnqueueResult]:
        with self._transaction() as conn:
            if params.replacing is not None:
                task_id, executor_id, token = params.replacing
                args = {"id": task_id, "executor": executor_id, "token": token}
                if self._on(conn, "task_set_replaced", args).fetchone() is None:
                    raise ConfigurationError(
                        f"task {task_id} cannot be replaced: it no longer runs on executor {executor_id}"
                    )
            results = self._enqueue_on(conn, list(params.tasks))
            inserted = {r.task_id for r in results if r.inserted}
            cur = conn.cursor()
            waiting = [{"id": i} for i in sorted(params.waiting & inserted)]
            if waiting:
                cur.executemany(self.sql["task_set_waiting"], waiting)
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
            if params.joining is not None:
                self._join_chords(conn, *params.joining)
            if params.resolver is not None:
                self._resolve_finished_parents(conn, params, inserted)
        return results

    def _resolve_finished_parents(self, conn: Any, params: CanvasEnqueue, inserted: set[str]) -> None:
        """Links from a task this insert did not write (its id existed: sent again, or revoked
        before it was sent) whose outcome is written already: resolved now, or the tasks
        waiting on it would wait forever. Its row is locked first, so an outcome committing
        meanwhile either sees these links or is seen here. It ran for another canvas: the
        errbacks its worker calls are called for this one as for a task that never ran."""
        own = {t.task_id for t in params.tasks}
        parents = {
            link.parent_id
            for link in params.links
            if link.kind is not LinkKind.GROUP and link.parent_id in own and link.parent_id not in inserted
        }
        outcomes = []
        for parent in sorted(parents):
            row = self._on(conn, "task_outcome_lock", {"id": parent}).fetchone()
            if row is not None and row["status"] in FINISHED:
                outcomes.append(Outcome(parent, Status(row["status"]), row["output"], row["error"]))
        if outcomes and params.resolver is not None:
            self._resolve(conn, outcomes, params.resolver, ran=False)

    def _join_chords(self, conn: Any, member: str, task_id: str) -> None:
        """``task_id`` becomes one more header task of each chord ``member`` counts towards.
        The member's own chord link is not done while it runs, so no body can start before
        this commits; each body's row is locked, so concurrent additions count in turn."""
        bodies = self._on(conn, "chord_bodies_of_member", {"member": member}).fetchall()
        if not bodies:
            raise NotInChord(f"task {member} is not a member of any chord")
        for body in bodies:
            self._on(conn, "task_lock", {"id": body["child_uuid"]})
            args = {"parent": task_id, "child": body["child_uuid"], "prepend": body["prepend"]}
            self._on(conn, "chord_link_append", args)
        self._on(conn, "task_set_has_links", {"id": task_id})

    def task_store_outcome(self, params: StoredOutcome) -> bool:
        task_id = params.task.task_id
        with self._transaction() as conn:
            inserted = any(r.inserted for r in self._enqueue_on(conn, [params.task]))
            if inserted:  # a row for a state written by hand: no worker may claim it
                self._on(conn, "task_set_waiting", {"id": task_id})
            if params.status is Status.WAITING:
                return inserted
            args = {
                "id": task_id,
                "status": str(params.status),
                "output": params.output,
                "error": params.error,
            }
            row = self._on(conn, "task_store_outcome", args).fetchone()
            final = params.status in (Status.SUCCESS, Status.ERROR)
            if row is not None and row["has_links"] and final and params.links is not None:
                outcome = Outcome(task_id, params.status, params.output, params.error)
                self._resolve(conn, [outcome], params.links)
        return inserted

    def chord_header_close(self, params: ChordHeaderClose) -> list[str]:
        started = []
        with self._transaction() as conn:
            for body in sorted(params.bodies):
                row = self._on(conn, "task_lock", {"id": body}).fetchone()
                link = self._on(
                    conn, "link_delete_open", {"parent": params.group_id, "child": body}
                ).fetchone()
                if row is None or link is None or row["status"] != Status.WAITING.value:
                    continue
                if self._on(conn, "chord_waiting", {"child": body}).fetchone()["waiting"]:
                    continue  # header tasks still running: the last one starts the body
                rows = self._on(conn, "chord_results", {"child": body}).fetchall()
                results = [(r["result_serialization"] or "json", r["result"]) for r in rows]
                inputs = (row["serialization"], row["inputs"])
                try:
                    new = params.links.with_results(inputs, results) if link["prepend"] else inputs
                except SerializationFailure as exc:
                    self._end(conn, body, Status.ERROR, params.links.failure(exc), None)
                    continue
                self._activate(conn, body, new)
                started.append(body)
        return started

    def group_members(self, group_id: str) -> list[str]:
        return [r["child_uuid"] for r in self._read("group_members", {"group": group_id})]

    def task_children(self, task_id: str) -> list[str]:
        return [r["child_uuid"] for r in self._read("task_children", {"id": task_id})]

    def task_children_many(self, task_ids: list[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {task_id: [] for task_id in task_ids}
        if task_ids:
            for r in self._read("task_children_many", {"ids": self._list(task_ids)}):
                found[r["parent_uuid"]].append(r["child_uuid"])
        return found

    def task_links_around(self, task_id: str, limit: int) -> list[TaskLinkInfo]:
        rows = self._read("task_links_around", {"id": task_id, "limit": limit})
        return [
            TaskLinkInfo(r["parent_uuid"], r["child_uuid"], r["kind"], int(r["position"]), bool(r["done"]))
            for r in rows
        ]

    def _resolve(self, conn: Any, outcomes: Iterable[Outcome], links: LinkResolver, ran: bool = True) -> None:
        # Work list of what ended: (id, status, serialized output, error, culprit, raised,
        # ran). ``culprit`` is the task a chord error names: the task that failed or was
        # revoked, carried down a chain. ``raised``: the task failed on its own (it ran, or
        # its chord's header failed it): only then are its errbacks called, as Celery calls
        # them; ``ran``: it ran (its worker called the errbacks it calls itself).
        pending: deque[tuple[str, Status, str | None, str | None, str, bool, bool]] = deque(
            (o.task_id, o.status, o.output, o.error, o.task_id, o.status is Status.ERROR, ran)
            for o in outcomes
        )
        while pending:
            parent, status, output, error, culprit, raised, ran = pending.popleft()
            if status is Status.CANCELLED:
                error = error or links.revoked_error(expired=False)
            for link in self._on(conn, "links_of_parent", {"id": parent}).fetchall():
                child, kind, prepend = link["child_uuid"], LinkKind(link["kind"]), bool(link["prepend"])
                tag = link["serialization"]  # the parent's: its output is written in it
                row = self._on(conn, "task_lock", {"id": child}).fetchone()
                if row is None or row["status"] != Status.WAITING.value:
                    continue  # cancelled (revoked), or resolved already
                inputs = (row["serialization"], row["inputs"])
                failure = None
                # A chord body fails with its own ChordError, a replaced task with its
                # replacement: their errbacks are called and chord errors name them. The tasks
                # after a failed one in a chain carry its failure (and not their errbacks).
                own = kind is not LinkKind.CHAIN
                try:
                    if kind in (LinkKind.ERRBACK, LinkKind.ERRBACK_UNRUN):
                        if raised and (kind is LinkKind.ERRBACK or not ran):
                            new = links.with_task_id(inputs, parent) if prepend else inputs
                            self._activate(conn, child, new, parent)
                        else:
                            self._end(conn, child, Status.CANCELLED, None, EndReason.NOT_NEEDED)
                    elif status is Status.SUCCESS and kind is LinkKind.REPLACE:
                        output_as_child = links.as_output((tag, output), row["serialization"])
                        args = {"id": child, "output": output_as_child}
                        ended = self._on(conn, "task_end_replaced", args).fetchone()
                        if ended is not None and ended["has_links"]:
                            pending.append((child, Status.SUCCESS, output_as_child, None, child, False, True))
                    elif status is Status.SUCCESS and kind is LinkKind.CHAIN:
                        new = links.with_result(inputs, (tag, output)) if prepend else inputs
                        self._activate(conn, child, new, parent)
                    elif status is Status.SUCCESS:
                        self._chord_part_done(conn, parent, child, (tag, output), inputs, prepend, links)
                    elif status is Status.CANCELLED and kind is not LinkKind.CHORD:
                        # A revoked task's chain (or the task it replaced) is never run: revoked too.
                        if self._end(conn, child, Status.CANCELLED, error, EndReason.DEPENDENCY_FAILED):
                            pending.append((child, Status.CANCELLED, None, error, culprit, False, False))
                    else:
                        failure = links.dependency_error(culprit, error, kind)
                except SerializationFailure as exc:  # a result the child cannot take: it fails
                    failure, own = links.failure(exc), True
                # A replaced task fails with its replacement: the failure is its own.
                failed_parent = status is not Status.SUCCESS and kind is not LinkKind.REPLACE
                reason = EndReason.DEPENDENCY_FAILED if failed_parent else None
                # A replaced task ran: the errbacks its worker calls went with its replacement.
                replaced = kind is LinkKind.REPLACE
                if failure is not None and self._end(conn, child, Status.ERROR, failure, reason):
                    pending.append(
                        (child, Status.ERROR, None, failure, child if own else culprit, own, replaced)
                    )

    def _end(
        self, conn: Any, task_id: str, status: Status, error: str | None, reason: EndReason | None
    ) -> bool:
        """End a WAITING task that will never run; True if it has links of its own. A child
        whose parent succeeded but whose result it cannot take ends without a reason: its
        failure is its own."""
        args = {
            "id": task_id,
            "status": str(status),
            "error": error,
            "reason": str(reason) if reason else None,
        }
        ended = self._on(conn, "task_end_waiting", args).fetchone()
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
        self._on(conn, "link_done", args)
        if self._on(conn, "chord_waiting", {"child": child}).fetchone()["waiting"]:
            return
        rows = self._on(conn, "chord_results", {"child": child}).fetchall()
        results = [(r["result_serialization"] or "json", r["result"]) for r in rows]
        self._activate(conn, child, links.with_results(inputs, results) if prepend else inputs, parent)

    def _activate(self, conn: Any, child: str, inputs: tuple[str, str], parent: str | None = None) -> None:
        """Release a WAITING child with its arguments; ``parent`` is the task whose outcome
        released it (its parent id, and its root's, as Celery records them)."""
        args = {"id": child, "tag": inputs[0], "inputs": inputs[1], "parent": parent}
        row = self._on(conn, "task_activate", args).fetchone()
        if row is not None and row["status"] == Status.ENQUEUED.value:
            self._announce_on(conn, row["queue_name"])
