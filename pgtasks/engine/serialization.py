"""Serialization of task inputs, outputs and step checkpoints.

JSON by default, with a ``serialization`` tag stored beside every value. Besides JSON's own
types, the JSON codec carries datetime, date, time, timedelta, UUID, Decimal, bytes, NaN and
the infinities as tagged objects (as kombu's JSON does; json_tags.py):
``{"__type__": "bytes", "__value__": "aGk="}``. A user's dict of that very shape is escaped on
the way in (``{"__type__": "dict", "__value__": [[key, value], ...]}``), so plain data cannot
forge a tag: it round-trips unchanged. Rows written before the escape read back as they did.
Pickle is available only when the application lists
it in ``accept_content``; a row whose tag is not accepted is refused, never guessed.
"""

from __future__ import annotations

import base64
import pickle
from dataclasses import dataclass
from typing import Any, Protocol

from pgtasks.engine.errors import PayloadTooLarge, SerializationError
from pgtasks.engine.failures import describe_failure
from pgtasks.engine.json_tags import JsonSerializer

_USUAL_FAILURES = (TypeError, ValueError, pickle.PicklingError, AttributeError)


class Serializer(Protocol):
    """Turns values into text and back; ``tag`` names the format in the database."""

    tag: str

    def dumps(self, value: Any) -> str: ...

    def loads(self, text: str) -> Any: ...


class PickleSerializer:
    """Pickle, base64-encoded. Only for applications that opt in: unpickling runs code."""

    tag = "pickle"

    def dumps(self, value: Any) -> str:
        return base64.b64encode(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")

    def loads(self, text: str) -> Any:
        return pickle.loads(base64.b64decode(text))


SERIALIZERS: dict[str, Serializer] = {"json": JsonSerializer(), "pickle": PickleSerializer()}
_NO_ARGUMENTS = SERIALIZERS["json"].dumps({"args": [], "kwargs": {}})


@dataclass(frozen=True, slots=True)
class Codec:
    """The serializer an application writes with and the tags it agrees to read."""

    serializer: str = "json"
    accept: frozenset[str] = frozenset({"json"})

    def __post_init__(self) -> None:
        unknown = ({self.serializer} | set(self.accept)) - set(SERIALIZERS)
        if unknown:
            raise SerializationError(
                f"unknown serializer {sorted(unknown)}; pgtasks offers {sorted(SERIALIZERS)}"
            )
        if self.serializer not in self.accept:
            raise SerializationError(
                f"serializer {self.serializer!r} must also be in accept_content {sorted(self.accept)}"
            )

    def dumps(self, value: Any, what: str = "value", tag: str | None = None) -> tuple[str, str]:
        """Serialize with ``tag`` (default: the application's serializer); return (tag, text)."""
        tag = tag or self.serializer
        if tag not in SERIALIZERS:
            raise SerializationError(f"{what}: unknown serialization tag {tag!r}")
        try:
            return tag, SERIALIZERS[tag].dumps(value)
        except RecursionError as exc:
            raise SerializationError(
                f"{what} cannot be serialized as {tag}: it is nested too deeply (or contains itself)"
            ) from exc
        except Exception as exc:  # a hostile __reduce__ or __str__ may raise anything
            detail = describe_failure(exc)
            if isinstance(exc, _USUAL_FAILURES):  # their text says it all: "Object of type X ..."
                detail = detail.split(": ", 1)[-1]
            raise SerializationError(f"{what} cannot be serialized as {tag}: {detail}") from exc

    def loads(self, tag: str, text: str, what: str = "value") -> Any:
        """Deserialize a stored value, refusing tags this application does not accept."""
        if tag not in SERIALIZERS:
            raise SerializationError(f"{what} has unknown serialization tag {tag!r}")
        if tag not in self.accept:
            raise SerializationError(
                f"{what} is serialized as {tag!r}, which this application does not accept "
                f"(accept_content={sorted(self.accept)})"
            )
        try:
            return SERIALIZERS[tag].loads(text)
        except Exception as exc:
            raise SerializationError(f"{what} cannot be deserialized as {tag}: {exc}") from exc

    def dumps_inputs(
        self,
        task_name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        max_bytes: int | None = None,
    ) -> tuple[str, str]:
        """Serialize a task's arguments; the error names the argument that failed.

        With ``max_bytes``, arguments whose stored text is longer than that many bytes
        (UTF-8) raise :class:`PayloadTooLarge`, naming the task and the size."""
        if not args and not kwargs and self.serializer == "json":
            return "json", _NO_ARGUMENTS
        _check_keys(task_name, args, kwargs, json_keys=self.serializer == "json")
        try:
            tag, text = self.dumps({"args": list(args), "kwargs": kwargs})
        except SerializationError:
            tag, text = self._dumps_each_input(task_name, args, kwargs)
        if max_bytes is not None:
            check_payload_size(task_name, text, max_bytes)
        return tag, text

    def _dumps_each_input(
        self, task_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[str, str]:
        """Serialize the arguments one by one, so that the error names the one that fails."""
        for index, arg in enumerate(args):
            self.dumps(arg, f"argument {index} of task {task_name!r}")
        for key, arg in kwargs.items():
            if not isinstance(key, str):
                raise SerializationError(f"keyword argument names of task {task_name!r} must be str")
            self.dumps(arg, f"keyword argument {key!r} of task {task_name!r}")
        return self.dumps({"args": list(args), "kwargs": kwargs}, f"arguments of task {task_name!r}")

    def loads_inputs(self, tag: str, text: str, task_name: str) -> tuple[list[Any], dict[str, Any]]:
        """Read back a task's arguments, checking their shape."""
        if text == _NO_ARGUMENTS and tag == "json" and "json" in self.accept:  # the common no-argument call
            return [], {}
        value = self.loads(tag, text, f"inputs of task {task_name!r}")
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("args"), list)
            or not isinstance(value.get("kwargs"), dict)
        ):
            raise SerializationError(
                f"inputs of task {task_name!r} are malformed: expected an object with 'args' "
                "(a list) and 'kwargs' (an object)"
            )
        return value["args"], value["kwargs"]


def _check_keys(task_name: str, args: tuple[Any, ...], kwargs: dict[str, Any], json_keys: bool) -> None:
    """Refuse keys that would not come back as given: keyword names that are not ``str`` and,
    with JSON (which turns ``{1: 2}`` into ``{"1": 2}``), dict keys that are not ``str`` at any
    depth. The message names the path of the key; very deep values are left to the serializer."""
    for key in kwargs:
        if not isinstance(key, str):
            raise SerializationError(
                f"keyword argument names of task {task_name!r} must be str, not "
                f"{type(key).__name__} ({_key_path(key)})"
            )
    if not json_keys:
        return
    stack: list[tuple[Any, str, int]] = [(a, f"argument {i}", 0) for i, a in enumerate(args)]
    stack += [(v, f"keyword argument {k!r}", 0) for k, v in kwargs.items()]
    while stack:
        value, path, depth = stack.pop()
        if depth > _MAX_KEY_CHECK_DEPTH:
            continue  # the serializer refuses it as nested too deeply
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SerializationError(
                        f"arguments of task {task_name!r}: the key {_key_path(key)} of {path} is of type "
                        f"{type(key).__name__}, not str (JSON would store it as a string)"
                    )
                if isinstance(item, (dict, list, tuple)):
                    stack.append((item, f"{path}[{key!r}]", depth + 1))
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                if isinstance(item, (dict, list, tuple)):
                    stack.append((item, f"{path}[{index}]", depth + 1))


_MAX_KEY_CHECK_DEPTH = 1000


def _key_path(key: Any) -> str:
    try:
        return repr(key)[:100]
    except Exception:
        return f"<{type(key).__name__}>"


def check_payload_size(task_name: str, text: str, max_bytes: int, what: str = "arguments") -> None:
    """Raise :class:`PayloadTooLarge` if ``text`` is longer than ``max_bytes`` in UTF-8;
    ``what`` names the value ("arguments", "return value")."""
    if len(text) * 4 <= max_bytes:  # no character takes more than 4 bytes: no need to encode
        return
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise PayloadTooLarge(
            f"{what} of task {task_name!r} {'are' if what == 'arguments' else 'is'} {size} bytes once "
            f"serialized, over the limit of "
            f"{max_bytes} bytes (max_payload_bytes): pass a reference to the data (a key, a URL) "
            "instead of the data itself, or raise the limit",
            size=size,
            limit=max_bytes,
        )
