"""Celery's ``celery.worker.control``: the registry of an application's own remote control
commands (:class:`Panel`, filled by :func:`control_command` and :func:`inspect_command`).

A command registered here runs in each pgtasks worker that loaded the module defining it
(``-A`` and its includes) when ``app.control.broadcast(name, arguments)``, ``celery control
name ...`` or ``celery inspect name`` reaches the worker through the database. As in Celery it
is called as ``fun(state, **arguments)``; ``state`` has the ``app``, the worker's ``hostname``
and a ``consumer`` with the same two (pgtasks' worker has no kombu consumer: a command that
reaches into ``state.consumer.qos`` or ``state.consumer.pool`` gets an AttributeError, sent
back as the command's ``{"error": ...}`` reply, as an exception in a command is in Celery).
Its return value is the worker's reply, JSON as kombu encodes it. pgtasks' own commands
(``ping``, ``shutdown``, ``pool_grow``, ...) are not in :attr:`Panel.data` and are answered
first: a registered command of the same name is not run.
"""

from __future__ import annotations

import json
import types
from collections import UserDict, namedtuple
from collections.abc import Callable
from typing import Any

from pgtasks.compat.kombu.utils import json as kombu_json
from pgtasks.worker.control import UNKNOWN_COMMAND

__all__ = ["Panel", "control_command", "inspect_command"]

controller_info_t = namedtuple(
    "controller_info_t",
    ["alias", "type", "visible", "default_timeout", "help", "signature", "args", "variadic"],
)


def ok(value: Any) -> dict[str, Any]:
    return {"ok": value}


def nok(value: Any) -> dict[str, Any]:
    return {"error": value}


class Panel(UserDict):  # type: ignore[type-arg]
    """Global registry of remote control commands: ``data`` by name (and alias), ``meta``
    (:data:`controller_info_t`) by name."""

    data: dict[str, Callable[..., Any]] = {}  # one for the process, as Celery's
    meta: dict[str, Any] = {}

    @classmethod
    def register(cls, *args: Any, **kwargs: Any) -> Any:
        """``Panel.register(fun)`` or ``@Panel.register(name=..., type=..., ...)``."""
        if args:
            return cls._register(**kwargs)(*args)
        return cls._register(**kwargs)

    @classmethod
    def _register(
        cls,
        name: str | None = None,
        alias: str | None = None,
        type: str = "control",
        visible: bool = True,
        default_timeout: float = 1.0,
        help: str | None = None,
        signature: str | None = None,
        args: list[tuple[str, Callable[[str], Any]]] | None = None,
        variadic: str | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        if type not in ("control", "inspect"):
            raise ValueError(f"a remote control command's type is 'control' or 'inspect', not {type!r}")

        def inner(fun: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(fun):
                raise TypeError(f"a remote control command is a function, not {fun!r}")
            control_name = name or fun.__name__
            text = help or (fun.__doc__ or "").strip().split("\n")[0]
            cls.data[control_name] = fun
            cls.meta[control_name] = controller_info_t(
                alias, type, visible, default_timeout, text, signature, args, variadic
            )
            if alias:
                cls.data[alias] = fun
            return fun

        return inner


def control_command(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a command that acts on the worker (its reply is usually ``{'ok': ...}``)."""
    return Panel.register(type="control", **kwargs)  # type: ignore[no-any-return]


def inspect_command(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a command that reads the worker and replies with what it found."""
    return Panel.register(type="inspect", **kwargs)  # type: ignore[no-any-return]


def registered(kind: str) -> dict[str, Any]:
    """The visible commands of ``kind`` ('control' or 'inspect') registered so far, by name."""
    return {name: meta for name, meta in Panel.meta.items() if meta.type == kind and meta.visible}


def commands_of(app: Any) -> Callable[[str, str, dict[str, Any]], Any]:
    """What a worker of ``app`` runs for a command it does not know itself (see the module):
    ``(worker name, command, arguments)`` to the reply, or ``UNKNOWN_COMMAND``."""

    def run_command(hostname: str, name: str, arguments: dict[str, Any]) -> Any:
        fun = Panel.data.get(name)
        if fun is None:
            return UNKNOWN_COMMAND
        consumer = types.SimpleNamespace(app=app, hostname=hostname)
        state = types.SimpleNamespace(app=app, hostname=hostname, consumer=consumer)
        reply = fun(state, **arguments)
        return json.loads(kombu_json.dumps(reply))  # what the reply row can carry, as kombu sends it

    return run_command
