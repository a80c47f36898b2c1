"""Secret task arguments: which arguments a task declares secret, and keeping their values
out of the worker's log lines.

``@app.task(secret_args=("password", 0))`` names parameters and/or positional indexes. At
registration each entry is resolved against the function's signature, so a secret is hidden
whether the caller passes it by position or by keyword, and a misspelt name fails at once
instead of leaving the value in the logs.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pgtasks.engine.errors import ConfigurationError, SerializationError
from pgtasks.engine.registry import Registry
from pgtasks.engine.serialization import Codec

MASK = "***"
SECRET_ARGS_OPTION = "secret_args"  # the key of TaskDefinition.options
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True, slots=True)
class SecretArgs:
    """The keyword names and positional indexes whose values are never logged."""

    names: frozenset[str] = frozenset()
    positions: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.names or self.positions)

    @classmethod
    def for_function(cls, fn: Callable[..., Any], declared: str | int | Iterable[str | int]) -> SecretArgs:
        """Resolve ``declared`` (parameter names and/or 0-based positional indexes) against
        ``fn``'s signature; raise ConfigurationError naming an entry that matches nothing."""
        entries = [declared] if isinstance(declared, (str, int)) else list(declared)
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # no signature to check against: take the entries as given
            params = []
        positional = [p for p in params if p.kind in _POSITIONAL]
        var_positional = not params or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        var_keyword = not params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        by_name = {p.name: p for p in params}
        names: set[str] = set()
        positions: set[int] = set()
        where = getattr(fn, "__qualname__", repr(fn))
        for entry in entries:
            if isinstance(entry, bool) or not isinstance(entry, (str, int)):
                raise ConfigurationError(
                    f"secret_args of {where}: {entry!r} is neither a parameter name nor a position"
                )
            if isinstance(entry, int):
                if entry < 0 or (entry >= len(positional) and not var_positional):
                    raise ConfigurationError(
                        f"secret_args of {where}: position {entry} is not a positional parameter"
                    )
                positions.add(entry)
                if (
                    entry < len(positional)
                    and positional[entry].kind is not inspect.Parameter.POSITIONAL_ONLY
                ):
                    names.add(positional[entry].name)
                continue
            param = by_name.get(entry)
            if param is None and not var_keyword:
                raise ConfigurationError(f"secret_args of {where}: {entry!r} is not one of its parameters")
            if param is not None and param.kind not in (*_POSITIONAL, inspect.Parameter.KEYWORD_ONLY):
                raise ConfigurationError(
                    f"secret_args of {where}: name the parameters themselves, not *{entry} or **{entry}"
                )
            if param is None or param.kind is not inspect.Parameter.POSITIONAL_ONLY:
                names.add(entry)
            if param is not None and param.kind in _POSITIONAL:
                positions.add(positional.index(param))
        return cls(frozenset(names), frozenset(positions))

    def mask(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The arguments with every secret value replaced by ``'***'``."""
        return (
            [MASK if i in self.positions else a for i, a in enumerate(args)],
            {k: MASK if k in self.names else v for k, v in kwargs.items()},
        )

    def hidden_texts(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[str, ...]:
        """The text forms of the secret values, to scrub from messages such as an error's."""
        found: set[str] = set()
        for i, value in enumerate(args):
            if i in self.positions:
                _texts_of(value, found, 0)
        for key, value in kwargs.items():
            if key in self.names:
                _texts_of(value, found, 0)
        found.discard("")
        return tuple(sorted(found, key=len, reverse=True))


def _texts_of(value: Any, found: set[str], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(value, dict):
        for item in value.values():
            _texts_of(item, found, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _texts_of(item, found, depth + 1)
    else:
        found.add(str(value))
        if isinstance(value, str):
            found.add(repr(value)[1:-1])  # as it appears inside a repr: escapes written out
        elif isinstance(value, bytes):
            found.add(value.decode("utf-8", "replace"))


def secret_args_of(registry: Registry, task_name: str) -> SecretArgs | None:
    """The secret arguments declared by the registered task ``task_name``, if any."""
    if task_name not in registry:
        return None
    secrets = registry.get(task_name).options.get(SECRET_ARGS_OPTION)
    return secrets if isinstance(secrets, SecretArgs) and secrets else None


def masked_inputs(
    codec: Codec, secrets: SecretArgs, tag: str, text: str, task_name: str
) -> tuple[str, tuple[str, ...]]:
    """The stored inputs as a log may show them (secrets masked), and the secret values'
    text forms. Unreadable inputs are not shown at all."""
    try:
        args, kwargs = codec.loads_inputs(tag, text, task_name)
    except SerializationError:
        return "<arguments not shown: unreadable>", ()
    shown_args, shown_kwargs = secrets.mask(args, kwargs)
    try:  # for display only: a value that cannot be shown must not stop the worker
        shown = json.dumps({"args": shown_args, "kwargs": shown_kwargs}, default=repr, separators=(",", ":"))
        return shown, secrets.hidden_texts(args, kwargs)
    except Exception:
        return "<arguments not shown: not displayable>", ()


def scrub(text: str, hidden: Sequence[str]) -> str:
    """``text`` with every occurrence of the ``hidden`` texts replaced by ``'***'``."""
    for secret in hidden:  # longest first, so that a secret inside another goes with it
        if secret:
            text = text.replace(secret, MASK)
    return text


def sender_named(name: str, meta: str | None) -> str:
    """The name its sender asked logs and monitoring to show for a task (Celery's ``shadow``,
    stored in its ``meta``), else ``name``."""
    if not meta or '"shadow"' not in meta:  # most tasks: no JSON to read
        return name
    try:
        shadow = json.loads(meta).get("shadow")
    except (ValueError, AttributeError):
        return name
    return str(shadow) if shadow else name


def sender_shown(meta: str | None) -> tuple[str | None, str | None]:
    """The texts its sender asked logs and monitoring to show for a task's args and kwargs
    (Celery's ``argsrepr``/``kwargsrepr``, stored in its ``meta``); None for each not given."""
    if not meta or "argsrepr" not in meta:  # most tasks: no JSON to read
        return None, None
    try:
        fields = json.loads(meta)
    except ValueError:
        return None, None
    if not isinstance(fields, dict):
        return None, None
    args, kwargs = fields.get("argsrepr"), fields.get("kwargsrepr")
    return (None if args is None else str(args)), (None if kwargs is None else str(kwargs))
