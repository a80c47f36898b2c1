"""Workers' replies printed as Celery's ``inspect``, ``control`` and ``status`` print them.

Each reply is a block: ``->  node: OK`` (or ``ERROR`` for an ``{"error": ...}`` reply), then
the reply indented: a list as ``* item`` lines (``- empty -`` when empty), ``{"ok": x}`` as
``x``, any other mapping as sorted, indented JSON, anything else as its text. With ``--json``
the replies are one JSON document. No reply at all is Celery's error line and exit status 69
(``EX_UNAVAILABLE``), which a probe (``inspect ping``) reads as failure. Celery's global
``-q`` (quiet) drops the ``->`` of each block (`` node: OK``) and ``inspect``'s count of
nodes; ``status`` prints its count whatever, as Celery's does.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterable
from pprint import pformat
from typing import Any

EX_UNAVAILABLE = 69  # what Celery's commands exit with when no worker replies
NO_REPLIES = "Error: No nodes replied within time constraint"


def pretty(reply: Any) -> tuple[str, str]:
    """A reply's status (``OK`` or ``ERROR``) and its text, as Celery lays them out."""
    if isinstance(reply, list):
        return "OK", "\n".join(f"* {item}" for item in reply) if reply else "- empty -"
    if isinstance(reply, dict):
        if "ok" in reply:
            return "OK", _indent(pretty(reply["ok"])[1])
        if "error" in reply:
            return "ERROR", _indent(pretty(reply["error"])[1])
        return "OK", json.dumps(reply, sort_keys=True, indent=4, default=str)
    if isinstance(reply, str):
        return "OK", reply
    return "OK", pformat(reply)


def _indent(text: str) -> str:
    return textwrap.indent(text, "    ", lambda line: True)


def say_reply(node: str, reply: Any, quiet: bool = False, body: bool = True) -> None:
    """Print one worker's reply (``body`` False: its first line only)."""
    status, text = pretty(reply)
    print(f"{'' if quiet else '-> '} {node}: {status}")
    if body:
        print(_indent(text))


def no_replies() -> int:
    """Celery's line for a command no worker answered; its exit status."""
    print(NO_REPLIES, file=sys.stderr)
    return EX_UNAVAILABLE


def nodes_online(count: int) -> None:
    print(f"\n{count} node{'s' if count != 1 else ''} online.")


def print_replies(replies: dict[str, Any] | None, as_json: bool, quiet: bool = False) -> int:
    """``inspect``'s output: each worker's reply and the count of those that replied (or one
    JSON object by node); exit status 0 when a worker replied."""
    if not replies:
        return no_replies()
    if as_json:
        print(json.dumps(replies, default=str))
        return 0
    for node, reply in replies.items():
        say_reply(node, reply, quiet)
    if not quiet:
        nodes_online(len(replies))
    return 0


def print_status(replies: dict[str, Any], as_json: bool, quiet: bool = False) -> int:
    """``status``'s output, Celery's: ``->  node: OK`` per live worker (or one JSON object by
    node), then the count of nodes online, after the JSON and with ``-q`` too; exit status 0
    when a worker is alive."""
    if not replies:
        return no_replies()
    if as_json:
        print(json.dumps(replies, default=str))
    else:
        for node, reply in replies.items():
            say_reply(node, reply, quiet, body=False)
    nodes_online(len(replies))
    return 0


def print_command_replies(
    replies: Iterable[dict[str, Any]] | None, as_json: bool, quiet: bool = False
) -> int:
    """``control``'s output: the replies ``[{node: reply}, ...]`` in the order they came (or
    that list as JSON); exit status 0 when a worker replied."""
    replies = list(replies or [])
    if not replies:
        return no_replies()
    if as_json:
        print(json.dumps(replies, default=str))
        return 0
    for one in replies:
        for node, reply in one.items():
            say_reply(node, reply, quiet)
    return 0
