"""Celery's ``chord`` (``celery.canvas.chord``): a group whose results go, as one list, to a
body (``chord(header)(body)``); a header task's failure fails the body with ChordError."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.canvas.group import group
from pgtasks.compat.celery.canvas.signature import Signature, maybe_signature
from pgtasks.compat.celery.canvas.stamping import stamp_headers
from pgtasks.compat.celery.canvas.workflow import Workflow

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

__all__ = ["chord"]


@Signature.register_type(name="celery.chord")
class chord(Workflow):
    """A group whose results go, as one list, to a body: ``chord(header)(body)``."""

    def __init__(self, header: Any, body: Any = None, app: Celery | None = None, **options: Any) -> None:
        # A generator header is kept as it is: sending the chord consumes it task by task,
        # as Celery does (planning.py); anything else that reads the header unrolls it.
        self._lazy = header if not isinstance(header, dict) and hasattr(header, "__next__") else None
        if self._lazy is None and not isinstance(header, group):
            # As Celery: a header given as a list holds copies (linking an errback to
            # ``chord.tasks`` leaves the caller's signatures as they were); a group is kept.
            members = [header] if isinstance(header, dict) else list(header)
            header = group([t.clone() if isinstance(t, Signature) else t for t in members], app=app)
        super().__init__("celery.chord", [group([], app=app) if self._lazy else header, body], app, **options)

    @classmethod
    def from_parts(cls, parts: list[Any], app: Celery | None, options: dict[str, Any]) -> Signature:
        return cls(parts[0], parts[1] if len(parts) > 1 else None, app=app, **options)

    @classmethod
    def rebuild(cls, d: dict[str, Any], app: Celery | None) -> Signature | None:
        """pgtasks' chord dict, or Celery's (``kwargs``: ``header``, a list, and ``body``)."""
        kwargs = d.get("kwargs")
        if isinstance(kwargs, dict) and "header" in kwargs and "tasks" not in kwargs:
            header = [maybe_signature(t, app=app) for t in kwargs.get("header") or ()]
            body = maybe_signature(kwargs.get("body"), app=app)
            return cls(header, body, app=app, **dict(d.get("options") or {}))
        return super().rebuild(d, app)

    @property
    def header(self) -> group:
        lazy = self._lazy
        if lazy is not None:  # read before it was sent: unrolled now
            self._lazy = None
            self["kwargs"]["tasks"][0] = group(list(lazy), app=self._app)
        return self["kwargs"]["tasks"][0]  # type: ignore[no-any-return]

    @property
    def tasks(self) -> list[Any]:
        """The header's tasks (as Celery's ``chord.tasks``)."""
        return self.header.tasks

    def take_lazy_header(self) -> Any:
        """The generator this chord's header still is (once), or None."""
        lazy, self._lazy = self._lazy, None
        return lazy

    @property
    def body(self) -> Any:
        return self["kwargs"]["tasks"][1]

    def freeze(self, _id: str | None = None, **kwargs: Any) -> Any:
        """Fix the ids of the header's tasks and of the body (the body's ``_id`` when given)
        now; the body's result, its parent the header's GroupResult (the header's alone for
        a chord without a body)."""
        header = self.header.freeze(self.options.get("group_id"))
        body = self._body_signature()
        if body is None:
            return header
        result = body.freeze(_id)
        result.parent = header  # as a chord sent alone gives it (planning.py)
        return result

    def link(self, callback: Any) -> Any:
        """``callback`` runs with the body's result."""
        body = self._body_signature()
        return body.link(callback) if body is not None else super().link(callback)

    def link_error(self, errback: Any) -> Any:
        """``errback`` runs once when the body fails, or a header task does (the body then
        fails with ChordError and calls it). With ``task_allow_error_cb_on_chord_header``,
        an immutable copy is linked to every header task too, as Celery documents."""
        body = self._body_signature()
        if body is None:
            return super().link_error(errback)
        errback = maybe_signature(errback, app=self._app)
        if self.app.conf.task_allow_error_cb_on_chord_header:
            for member in self.header._signatures():
                member.link_error(errback.clone().set(immutable=True))
        return body.link_error(errback)

    def stamp(self, visitor: Any = None, append_stamps: bool = False, **headers: Any) -> None:
        """Stamp the header's tasks (``on_chord_header_start`` / ``_end``), then the body with
        the visitor's ``on_chord_body`` stamps added."""
        hooks = ("on_chord_header_start", "on_chord_header_end")
        headers = self._stamp_members(visitor, append_stamps, headers, hooks, self.header._signatures())
        body = self._body_signature()
        if body is not None:
            visited = (visitor.on_chord_body(self, **headers) or {}) if visitor is not None else None
            body.stamp(visitor, append_stamps, **stamp_headers(self, visited, append_stamps, headers))

    def __or__(self, other: Any) -> Any:
        """As Celery: ``chord | task`` (or a group of one) is the chord with its body followed
        by it; anything else makes a chain."""
        if not isinstance(other, dict):
            return NotImplemented
        other = maybe_signature(other, app=self._app)
        if isinstance(other, group) and len(other.tasks) == 1:
            other = maybe_signature(other.tasks[0], app=self._app)
        if isinstance(other, Signature) and not isinstance(other, Workflow) and self.body is not None:
            composed = self.clone()
            composed["kwargs"] = {"tasks": [self.header, maybe_signature(self.body, app=self._app) | other]}
            return composed
        return super().__or__(other)

    def _body_signature(self) -> Any:
        if self.body is None:
            return None
        body = maybe_signature(self.body, app=self._app)
        self["kwargs"]["tasks"][1] = body
        return body

    def __call__(self, body: Any = None, **options: Any) -> Any:
        if body is not None:
            return chord(self.header, body, app=self._app).apply_async(**options)
        return self.apply_async(**options)

    def run(
        self,
        header: Any,
        body: Any,
        partial_args: Any = (),
        app: Celery | None = None,
        interval: float | None = None,
        countdown: float = 1,
        max_retries: int | None = None,
        eager: bool = False,
        task_id: str | None = None,
        kwargs: Any = None,
        **options: Any,
    ) -> Any:
        """Send ``header`` with ``body`` waiting for it, as Celery's ``chord.run`` (which
        ``apply_async`` calls): the body's AsyncResult. ``interval``, ``countdown`` and
        ``max_retries`` tune Celery's polling of the header (``celery.chord_unlock``); here the
        database releases the body when the last header task ends, so they are not read.
        ``eager`` runs it in this process (:meth:`apply`)."""
        whole = chord(header, body, app=app or self._app)
        if task_id is not None:
            options["task_id"] = task_id
        if eager:
            return whole.apply(partial_args, kwargs, **options)
        return whole.apply_async(partial_args, kwargs, **options)

    def apply(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        results = self.header.apply(args)
        if self.body is None:  # no body: the header's results, as when sent (planning.py)
            return results
        values = [r.get(disable_sync_subtasks=False) for r in results.results]
        return maybe_signature(self.body).apply((values,))
