"""The rest of Celery's ``celery.canvas.Signature`` API, as a mixin of
:class:`pgtasks.compat.signatures.Signature`: ``on_error``, ``replace``, ``flatten_links``,
``reprcall``, the list options, the ids a signature carries, and the stamping API (which
pgtasks does not have: a clear NotImplementedError)."""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pgtasks.compat.signatures import Signature

STAMPING = (
    "signature stamping is not supported by pgtasks; pass what the stamp would carry in "
    "headers=... (apply_async(headers=...)), which the task reads from self.request.headers"
)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


class SignatureExtras:
    """Mixed into Signature."""

    # Celery's registry of signature types by name (register_type); pgtasks' own workflow
    # types are registered by their Celery task name (Signature._kinds).
    TYPES: ClassVar[dict[str, type]] = {}

    if TYPE_CHECKING:  # provided by Signature

        @property
        def options(self) -> dict[str, Any]: ...

        @property
        def args(self) -> tuple[Any, ...]: ...

        @property
        def kwargs(self) -> dict[str, Any]: ...

        @property
        def name(self) -> str: ...

        @property
        def app(self) -> Any: ...

        def link_error(self, errback: Any) -> Any: ...

        def clone(self, args: Any = None, kwargs: Any = None, **opts: Any) -> Signature: ...

        def get(self, key: str, default: Any = None) -> Any: ...

    @classmethod
    def register_type(cls, name: str | None = None) -> Callable[[type], type]:
        """A class decorator registering a signature subclass under ``name`` (its class name)."""

        def register(subclass: type) -> type:
            cls.TYPES[name or subclass.__name__] = subclass
            return subclass

        return register

    @classmethod
    def from_dict(cls, d: dict[str, Any], app: Any = None) -> Signature:
        """The signature (or workflow) a dict describes, as it travels in messages."""
        from pgtasks.compat.signatures import signature  # why: signatures.py imports this module

        return signature(dict(d), app=app)

    @property
    def AsyncResult(self) -> Any:
        """The result class of the signature's task (the app's AsyncResult)."""
        return self.app.AsyncResult

    @property
    def parent_id(self) -> str | None:
        return self.options.get("parent_id")

    @property
    def root_id(self) -> str | None:
        return self.options.get("root_id")

    @property
    def subtask_type(self) -> str | None:
        kind = self.get("subtask_type")
        return None if kind is None else str(kind)

    def on_error(self, errback: Any) -> Any:
        """:meth:`link_error` that returns this signature, so calls can be chained:
        ``add.s(2, 2).on_error(handle.s()).delay()`` sends ``add``."""
        self.link_error(errback)
        return self

    def replace(self, args: Any = None, kwargs: Any = None, options: Any = None) -> Signature:
        """A copy with ``args``, ``kwargs`` or ``options`` replaced (not merged)."""
        copy = self.clone()
        if args is not None:
            copy.args = args
        if kwargs is not None:
            copy.kwargs = kwargs
        if options is not None:
            copy.options = options
        return copy

    def flatten_links(self) -> list[Any]:
        """This signature and every callback linked below it, depth first."""
        from pgtasks.compat.signatures import maybe_signature  # why: see from_dict

        found: list[Any] = [self]
        for link in _as_list(self.options.get("link")):
            found.extend(maybe_signature(link, app=None).flatten_links())
        return found

    def reprcall(self, *args: Any, **kwargs: Any) -> str:
        """``name(args, kwargs)`` as the call would be made with these extra arguments."""
        merged_args = tuple(args) + self.args
        merged = {**self.kwargs, **kwargs}
        shown = [*(repr(a) for a in merged_args), *(f"{k}={v!r}" for k, v in merged.items())]
        return f"{self.name}({', '.join(shown)})"

    def append_to_list_option(self, key: str, value: Any) -> Any:
        """Add ``value`` to the list option ``key`` (made a list if it was not) once."""
        items = self.options.setdefault(key, [])
        if not isinstance(items, MutableSequence):
            items = self.options[key] = [items]
        if value not in items:
            items.append(value)
        return value

    def extend_list_option(self, key: str, value: Any) -> None:
        """Add every item of ``value`` to the list option ``key``."""
        items = self.options.setdefault(key, [])
        if not isinstance(items, MutableSequence):
            items = self.options[key] = [items]
        items.extend(_as_list(value))

    def election(self) -> Any:
        raise NotImplementedError(
            "Signature.election is not supported by pgtasks: send it with apply_async()"
        )

    def stamp(self, visitor: Any = None, append_stamps: bool = False, **headers: Any) -> Any:
        raise NotImplementedError(STAMPING)

    def stamp_links(self, visitor: Any, append_stamps: bool = False, **headers: Any) -> Any:
        raise NotImplementedError(STAMPING)
