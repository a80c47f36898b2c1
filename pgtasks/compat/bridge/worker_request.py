"""The request Celery's worker signals carry (``task_received``, ``task_revoked``): Celery's
worker ``Request`` (``celery.worker.request.Request``), not the task's ``self.request``.

It reads as the task's request does (``id``, ``args``, ``stamps``, ``delivery_info``, every
custom header, ...), and adds what Celery's worker request has of its own: ``name`` and
``task_name``, ``task_id``, ``request_dict``, and the message body's embed: ``_payload`` (and
the private ``_Request__payload`` that handlers written for Celery read), ``(args, kwargs,
embed)`` where the embed holds the ``callbacks`` and ``errbacks`` as signature dicts, as the
sender linked them (stamps included), ``chain`` (the steps after the task in its chain, the next
one last: bridge/chain_requests.py) and ``chord``; ``errbacks`` is that list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgtasks.compat.bridge.chain_requests import LINKS_KEY
from pgtasks.compat.bridge.requests import request_from_record, stored_meta
from pgtasks.compat.celery.app.task import Context
from pgtasks.sysdb.records import TaskRecord


class Request:
    """Celery's worker request for one claimed task (see the module)."""

    def __init__(self, context: Context, name: str, links: Mapping[str, Any] | None) -> None:
        links = links or {}
        self._context = context
        self.name = context.shadow or name  # as Celery's worker request: the shadow name shown
        self._errbacks = _signatures(links.get("errbacks"))
        embed = {
            "callbacks": _signatures(links.get("callbacks")),
            "errbacks": self._errbacks,
            "chain": context.chain,
            "chord": context.chord,
        }
        self.__payload = (context.args, context.kwargs, embed)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_context":  # not built yet (a copy): no recursion
            raise AttributeError(name)
        return getattr(self._context, name)

    @property
    def _payload(self) -> tuple[Any, Any, dict[str, Any]]:
        return self.__payload

    @property
    def errbacks(self) -> list[dict[str, Any]] | None:
        """Every ``link_error`` signature of the task, as dicts (None when it has none)."""
        return self._errbacks

    @property
    def task_name(self) -> str:
        return self.name

    @property
    def task_id(self) -> str | None:
        return self._context.id

    @property
    def request_dict(self) -> dict[str, Any]:
        """The request's fields as a dict (Celery: the message's headers)."""
        return {**self._context.__dict__, "task": self.name}

    def __repr__(self) -> str:
        return f"<Request: {self.name}[{self._context.id}]>"


def worker_request(
    record: TaskRecord, hostname: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Request:
    """The worker request of a claimed ``record`` (its arguments decoded by the caller)."""
    context = request_from_record(record, record.executor_id or hostname, args, kwargs)
    return Request(context, record.name, stored_meta(record).get(LINKS_KEY))


def _signatures(given: Any) -> list[dict[str, Any]] | None:
    return [dict(s) for s in given] if given else None
