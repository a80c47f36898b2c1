"""Command-line options a Celery app adds (Celery's ``app.user_options``): ``preload`` options
every command takes, and options of one command (``worker``, ``beat``, ...), given as click
``Option`` objects as Celery's documentation shows. ``pgtasks`` parses them after its own and
sends the preload values to the ``user_preload_options`` signal, as Celery does; the other
values are set on the command's arguments (pgtasks runs no bootsteps that would read them).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pgtasks.cli.loader import load_app

__all__ = ["take_app_options"]


def take_app_options(args: argparse.Namespace, unknown: list[str], error: Callable[[str], Any]) -> None:
    """Parse ``unknown`` (what pgtasks' parser did not know) with the options the ``-A`` app
    added; ``error`` (the parser's) for anything left. Sends ``user_preload_options`` when
    the app has preload options."""
    spec, command = getattr(args, "app", None), getattr(args, "command", None)
    app = load_app(spec) if spec else None
    user_options = getattr(app, "user_options", None)
    preload = list(user_options.get("preload", ())) if user_options else []
    own = list(user_options.get(command, ())) if user_options and command else []
    if not preload and not own:
        if unknown:
            error(f"unrecognized arguments: {' '.join(unknown)}")
        return
    parser = argparse.ArgumentParser(prog=f"pgtasks {command}", add_help=False)
    for option in [*preload, *own]:
        _add(parser, option)
    values, left = parser.parse_known_args(unknown)
    if left:
        error(f"unrecognized arguments: {' '.join(left)}")
    given = vars(values)
    for name, value in given.items():
        if not hasattr(args, name):
            setattr(args, name, value)
    if preload:
        from pgtasks.compat.celery import signals  # only a Celery app has preload options

        options = {option.name: given[option.name] for option in preload}
        signals.user_preload_options.send(sender=app, app=app, options=options)


def _add(parser: argparse.ArgumentParser, option: Any) -> None:
    """A click ``Option`` as the argparse option it stands for."""
    flags = [*getattr(option, "opts", ()), *getattr(option, "secondary_opts", ())]
    if not flags or not getattr(option, "name", None):
        raise TypeError(f"app.user_options take click Option objects, not {option!r}")
    kwargs: dict[str, Any] = {"dest": option.name, "help": getattr(option, "help", None)}
    default = _given(getattr(option, "default", None))
    if getattr(option, "is_flag", False):
        if getattr(option, "secondary_opts", None):
            kwargs.update(action=argparse.BooleanOptionalAction, default=bool(default))
            flags = list(option.opts)
        else:
            flag_value = _given(getattr(option, "flag_value", None))
            const = True if flag_value is None else flag_value
            kwargs.update(action="store_const", const=const, default=default or False)
    else:
        kind = getattr(option, "type", None)
        if kind is not None and hasattr(kind, "convert"):
            kwargs["type"] = lambda text: kind.convert(text, option, None)
        kwargs["action"] = "append" if getattr(option, "multiple", False) else "store"
        kwargs["default"] = list(default or ()) if getattr(option, "multiple", False) else default
    parser.add_argument(*flags, **kwargs)


def _given(value: Any) -> Any:
    """``value``, or None for click's "not set" marker (click 8.2 and later)."""
    return None if type(value).__name__ == "Sentinel" else value
