"""Completion: writing task outcomes, written once for both dialects.

Outcomes without links take the dialect's fast path (PostgreSQL: one ``UPDATE ... FROM
unnest(...)`` in autocommit for the whole batch). Outcomes of tasks that others wait for
(``has_links``) are written in one transaction with every consequence for those others
(see ``links.py``): nothing is lost, or done twice, between a parent's outcome and its
children.
"""

from __future__ import annotations

from pgtasks.sysdb.links import LinkStore
from pgtasks.sysdb.records import CompleteParams, Status

# The outcomes that resolve links: a release (ENQUEUED) or a retry leaves them waiting.
FINAL = (Status.SUCCESS, Status.ERROR)


class CompletionStore(LinkStore):
    """``tasks_complete``; see :class:`pgtasks.sysdb.interface.SystemDatabase`."""

    def tasks_complete(self, params: CompleteParams) -> list[str]:
        linked = [o for o in params.outcomes if o.has_links]
        if params.links is None or not linked:
            return self._complete_plain(params)
        with self._transaction() as conn:
            written = self._complete_on(conn, params)
            done = set(written)
            final = [o for o in linked if o.task_id in done and o.status in FINAL and o.retry_in_ms is None]
            if final:
                self._resolve(conn, final, params.links)
        return written
