"""Celery's ``%`` formats in a worker's node name and in the paths named after it
(``--logfile``, ``--pidfile``): ``%h``, ``%n``, ``%d``, ``%i``, ``%I``, ``%%``, with a precise
error for any other letter, as Celery refuses it."""

from __future__ import annotations

import re

from pgtasks.engine.errors import ConfigurationError


class UnknownFormat(ConfigurationError):
    """A ``%`` letter that is not one of the formats."""


def expand_formats(text: str, keys: dict[str, str], what: str) -> str:
    """``text`` with each ``%x`` of ``keys`` (and ``%%``) replaced; UnknownFormat names another."""
    known = {**keys, "%": "%"}

    def resolve(match: re.Match[str]) -> str:
        if match.group(1) not in known:
            formats = " ".join(f"%{key}" for key in known)
            raise UnknownFormat(f"unknown format %{match.group(1)} in {what} {text!r} (known: {formats})")
        return known[match.group(1)]

    return re.sub(r"%([%\w])", resolve, text)


def expand_node_path(pattern: str, node: str, index: int | None = None) -> str:
    """A ``--logfile`` or ``--pidfile`` path for the worker ``node`` as Celery's worker expands
    it: ``%n`` the node's name (``w1`` of ``w1@host``), ``%h`` its host, ``%d`` that host's
    domain, ``%p`` the whole node name, ``%i`` the pool process index (``0`` in the worker's
    own process), ``%I`` ``-index`` (empty there). A name without ``@`` (a native worker's
    ``-n w1``; a Celery app's always has one) is both ``%n`` and ``%h``, so that two such
    workers get two files."""
    name, _, host = node.rpartition("@") if "@" in node else (node, "", node)
    keys = {"h": host, "n": name or "celery", "d": host.partition(".")[2], "p": node}
    keys |= {"i": str(index or 0), "I": f"-{index}" if index else ""}
    return expand_formats(pattern, keys, "path")
