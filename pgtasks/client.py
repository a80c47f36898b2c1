"""Client: send tasks by name and read results from a process that has no task code."""

from __future__ import annotations

from collections.abc import Sequence

from pgtasks.engine.core import Engine
from pgtasks.engine.settings import DEFAULT_MAX_PAYLOAD_BYTES, Settings
from pgtasks.management import TaskManagement
from pgtasks.sending import Sending
from pgtasks.sysdb.urls import DEFAULT_SCHEMA, resolve_database_url
from pgtasks.waiting import Messaging


class Client(Sending, Messaging, TaskManagement):
    """Enqueue by task name, read results and manage tasks, without the task code.

    ``client.enqueue(name, args, kwargs, **options)`` (see :class:`~pgtasks.sending.Sending`)
    is the same operation as ``App.send_task``.

    ``client.enqueue("proj.add", [1, 2], conn=psycopg_conn)`` joins the caller's open
    transaction on PostgreSQL: the task exists if and only if that transaction commits.
    """

    def __init__(
        self,
        database_url: str | None = None,
        *,
        schema: str = DEFAULT_SCHEMA,
        default_queue: str = "default",
        serializer: str = "json",
        accept_content: Sequence[str] = ("json",),
        pool_size: int = 5,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.engine = Engine(
            Settings(
                database_url=resolve_database_url(database_url),
                schema=schema,
                default_queue=default_queue,
                serializer=serializer,
                accept_content=tuple(accept_content),
                pool_size=pool_size,
                max_payload_bytes=max_payload_bytes,
            )
        )
