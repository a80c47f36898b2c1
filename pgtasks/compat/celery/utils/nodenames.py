"""Celery's ``celery.utils.nodenames``: worker node names (``name@host``) and the ``%h``,
``%n``, ``%d`` expansion of names and file paths."""

from __future__ import annotations

import os
import socket
from typing import Any

from pgtasks.compat.celery.utils.text import simple_format
from pgtasks.compat.kombu.entity import Exchange, Queue

__all__ = [
    "NODENAME_DEFAULT",
    "NODENAME_SEP",
    "anon_nodename",
    "default_nodename",
    "gethostname",
    "host_format",
    "node_format",
    "nodename",
    "nodesplit",
    "worker_direct",
]

NODENAME_SEP = "@"
NODENAME_DEFAULT = "celery"


def gethostname() -> str:
    return socket.gethostname()


def nodename(name: str, hostname: str) -> str:
    """``name@hostname``."""
    return NODENAME_SEP.join((name, hostname))


def anon_nodename(hostname: str | None = None, prefix: str = "gen") -> str:
    """A node name for a process that is no worker: ``gen<pid>@<host>``."""
    return nodename(f"{prefix}{os.getpid()}", hostname or gethostname())


def nodesplit(name: str) -> tuple[str | None, str]:
    """``('name', 'host')`` of ``name@host``; ``(None, 'host')`` without a name."""
    parts = name.split(NODENAME_SEP, 1)
    return (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def default_nodename(hostname: str | None) -> str:
    name, host = nodesplit(hostname or "")
    return nodename(name or NODENAME_DEFAULT, host or gethostname())


def host_format(s: str, host: str | None = None, name: str | None = None, **extra: Any) -> str:
    """``s`` with ``%h`` the host name, ``%n`` ``name`` (else the host's first label), ``%d``
    the domain, and each key of ``extra`` expanded (:func:`~celery.utils.text.simple_format`)."""
    host = host or gethostname()
    short, _, domain = host.partition(".")
    return simple_format(s, {"h": host, "n": name or short, "d": domain, **extra})


def node_format(s: str, name: str, **extra: Any) -> str:
    """:func:`host_format` for the node ``name`` (``worker@host``): ``%n`` is its name part,
    ``%h`` and ``%d`` its host's, ``%p`` the whole node name."""
    short, host = nodesplit(name)
    return host_format(s, host, short or NODENAME_DEFAULT, p=name, **extra)


def worker_direct(hostname: str) -> Queue:
    """The queue Celery gives each worker for itself (``<node>.dq2``). pgtasks names no such
    queue for its workers (commands reach a worker through the database); the Queue is
    returned for code that names it."""
    return Queue(f"{hostname}.dq2", Exchange("C.dq2", type="direct"), routing_key=hostname)
