"""Revoking by stamped headers (``app.control.revoke_by_stamped_headers``), durably: the revoked
stamps are kept in the database, as the published state of one task row that no worker ever
claims (``pgtasks:revoked-stamps``, named ``celery.revoked_stamps``), so every worker, even one
started later, sees them. A worker checks a task that carries stamps when it starts it: one
whose stamps match is cancelled (REVOKED, what waits on it resolved as for ``revoke``; the
worker sends ``task_revoked``) and not run. A task without stamps costs nothing; a revoke is a
read-modify-write of that one row (two revokes at the same instant may lose one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.engine.events import task_state
from pgtasks.engine.stored import store_state

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

ROW_ID = "pgtasks:revoked-stamps"
ROW_NAME = "celery.revoked_stamps"
STATE = "REVOKED_STAMPS"


def revoked_stamps(app: Celery) -> dict[str, list[Any]]:
    """The revoked stamps: each stamped header with the values that revoke a task."""
    found = task_state(app.engine, ROW_ID)
    meta = found[1] if found is not None else None
    return dict(meta) if isinstance(meta, dict) else {}


def store_revoked_stamps(app: Celery, stamps: dict[str, list[Any]]) -> None:
    """Replace the revoked stamps (``{}`` forgets them all)."""
    store_state(app.engine, ROW_ID, STATE, stamps, name=ROW_NAME)


def revoke_stamps(app: Celery, headers: dict[str, Any]) -> None:
    """Add ``headers`` (a header and one value or a list of them) to the revoked stamps."""
    if not isinstance(headers, dict) or not all(isinstance(k, str) for k in headers):
        raise TypeError(f"revoke_by_stamped_headers takes a dict of header names, not {headers!r}")
    stamps = revoked_stamps(app)
    for header, values in headers.items():
        known = stamps.setdefault(header, [])
        known.extend(v for v in (values if isinstance(values, (list, tuple)) else [values]) if v not in known)
    store_revoked_stamps(app, stamps)


def revoking_stamp(stamps: dict[str, Any], revoked: dict[str, list[Any]]) -> dict[str, Any] | None:
    """The stamp (header and value) of ``stamps`` that ``revoked`` revokes, or None. A stamp
    that is a list matches when one of its values does."""
    for header, value in stamps.items():
        if header not in revoked or value is None:
            continue
        for one in value if isinstance(value, (list, tuple)) else [value]:
            if one in revoked[header]:
                return {header: one}
    return None
