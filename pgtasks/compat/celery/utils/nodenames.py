"""Celery's ``celery.utils.nodenames``: worker node names (``name@host``)."""

from __future__ import annotations

import socket

__all__ = ["NODENAME_SEP", "default_nodename", "gethostname", "nodename", "nodesplit", "worker_direct"]

NODENAME_SEP = "@"


def gethostname() -> str:
    return socket.gethostname()


def nodename(name: str, hostname: str) -> str:
    """``name@hostname``."""
    return NODENAME_SEP.join((name, hostname))


def nodesplit(name: str) -> tuple[str | None, str]:
    """``('name', 'host')`` of ``name@host``; ``(None, 'host')`` without a name."""
    parts = name.split(NODENAME_SEP, 1)
    return (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def default_nodename(hostname: str | None) -> str:
    name, host = nodesplit(hostname or "")
    return nodename(name or "celery", host or gethostname())


def worker_direct(hostname: str) -> str:
    """The name of a worker's own queue in Celery (pgtasks has none; kept for imports)."""
    return f"{hostname}.dq2"
