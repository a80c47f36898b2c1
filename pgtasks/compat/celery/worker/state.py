"""Celery's ``celery.worker.state``: what the workers hold, read from the database.

A Celery worker keeps its state in its own memory: the revoked ids (a bounded set each worker
fills from broadcast revokes), the requests it runs and has reserved, counters. pgtasks'
workers share one state, the database, so these names are views of it, the same in every
process (a worker, the client that sends, a test):

- :data:`revoked`: the ids of revoked tasks (``CANCELLED`` rows, including the ids revoked
  before their task was sent); ``id in revoked`` reads one row, ``add`` revokes durably;
- :data:`revoked_stamps`: the stamped headers revoked (``revoke_by_stamped_headers``), as
  the database keeps them for every worker; ``clear()`` forgets them;
- :data:`active_requests`: the requests of the tasks workers hold now (``PENDING`` rows);
  :data:`reserved_requests` is empty: workers claim tasks for free slots, and a task a
  prefork worker holds ahead is already ``PENDING`` (so active);
- :data:`total_count`: tasks finished by name, as Celery counts what a worker processed.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Iterator, MutableMapping, Set
from typing import Any

from pgtasks import __version__
from pgtasks.compat.bridge import revoked_stamps as stamp_store
from pgtasks.compat.bridge.requests import request_from_record
from pgtasks.compat.celery._state import get_current_app
from pgtasks.compat.celery.worker.request import Request
from pgtasks.sysdb.records import ListTasksParams, Status, TaskRecord

__all__ = [
    "SOFTWARE_INFO",
    "active_requests",
    "reserved_requests",
    "revoked",
    "revoked_stamps",
    "total_count",
]

LIST_LIMIT = 1000  # rows read per listing; the views say it where it bounds them

SOFTWARE_INFO = {
    "sw_ident": "pgtasks",
    "sw_ver": __version__,
    "sw_sys": platform.system(),
}


def _listed(status: Status) -> list[TaskRecord]:
    return get_current_app().engine.admin.tasks(ListTasksParams(status=(status,), limit=LIST_LIMIT))


class RevokedIds(Set[str]):
    """The ids of revoked tasks of the current app's database. Membership reads the task's
    row; iterating (and ``len``) lists the newest 1,000. Revokes are durable: ``add`` revokes
    (as ``app.control.revoke``); nothing un-revokes a task, so there is no ``discard``."""

    def __contains__(self, task_id: object) -> bool:
        if not isinstance(task_id, str):
            return False
        record = get_current_app().engine.admin.task(task_id)
        return record is not None and record.status is Status.CANCELLED

    def __iter__(self) -> Iterator[str]:
        return iter([record.task_id for record in _listed(Status.CANCELLED)])

    def __len__(self) -> int:
        return len(_listed(Status.CANCELLED))

    def add(self, task_id: str) -> None:
        get_current_app().control.revoke(task_id)

    def update(self, task_ids: Iterable[str]) -> None:
        get_current_app().control.revoke(list(task_ids))


class RevokedStamps(MutableMapping[str, Any]):
    """Celery's revoked stamped headers: a view of the current app's database (the revoked
    stamps every worker checks, bridge/revoked_stamps.py). Setting a header revokes its values
    (``app.control.revoke_by_stamped_headers``); deleting one or ``clear()`` forgets them."""

    def _stamps(self) -> dict[str, list[Any]]:
        return stamp_store.revoked_stamps(get_current_app())

    def __getitem__(self, key: str) -> Any:
        return self._stamps()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        stamp_store.revoke_stamps(get_current_app(), {key: value})

    def __delitem__(self, key: str) -> None:
        stamps = self._stamps()
        del stamps[key]
        stamp_store.store_revoked_stamps(get_current_app(), stamps)

    def __iter__(self) -> Iterator[str]:
        return iter(self._stamps())

    def __len__(self) -> int:
        return len(self._stamps())

    def clear(self) -> None:
        stamp_store.store_revoked_stamps(get_current_app(), {})


class ActiveRequests(Set[Request]):
    """The requests of the tasks workers hold now (the newest 1,000 ``PENDING`` rows)."""

    def _requests(self) -> list[Request]:
        codec = get_current_app().engine.codec
        found = []
        for record in _listed(Status.PENDING):
            try:
                args, kwargs = codec.loads_inputs(record.serialization, record.inputs, record.name)
            except Exception:  # unreadable inputs: the request shows none
                args, kwargs = [], {}
            context = request_from_record(record, record.executor_id or "", tuple(args), dict(kwargs))
            found.append(Request(**vars(context)))
        return found

    def __contains__(self, item: object) -> bool:
        task_id = getattr(item, "id", item)
        if not isinstance(task_id, str):
            return False
        record = get_current_app().engine.admin.task(task_id)
        return record is not None and record.status is Status.PENDING

    def __iter__(self) -> Iterator[Request]:
        return iter(self._requests())

    def __len__(self) -> int:
        return len(_listed(Status.PENDING))


class FinishedCounts(MutableMapping[str, int]):
    """Tasks finished successfully by name (the newest 1,000 of them), read-only."""

    def _counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in _listed(Status.SUCCESS):
            counts[record.name] = counts.get(record.name, 0) + 1
        return counts

    def __getitem__(self, name: str) -> int:
        return self._counts()[name]

    def __setitem__(self, name: str, value: int) -> None:
        raise TypeError("total_count is read from the database")

    def __delitem__(self, name: str) -> None:
        raise TypeError("total_count is read from the database")

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts())

    def __len__(self) -> int:
        return len(self._counts())


revoked = RevokedIds()
revoked_stamps = RevokedStamps()
active_requests = ActiveRequests()
reserved_requests: frozenset[Request] = frozenset()
total_count = FinishedCounts()
