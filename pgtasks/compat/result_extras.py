"""The rest of Celery's ``celery.result`` API, as mixins of :mod:`pgtasks.compat.result`'s
classes: a result's graph of dependencies, ``maybe_throw``, and the set operations and native
joins of ``ResultSet``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from pgtasks.compat import states
from pgtasks.compat.current import current_app
from pgtasks.compat.exceptions import TaskRevokedError, TimeoutError

if TYPE_CHECKING:
    from pgtasks.compat.app import Celery
    from pgtasks.compat.result import AsyncResult


class DependencyGraph:
    """Celery's ``celery.utils.graph.DependencyGraph``, as far as results use it: nodes, each
    with the nodes it depends on."""

    def __init__(self, it: Iterable[tuple[Any, Iterable[Any]]] | None = None) -> None:
        self.adjacent: dict[Any, list[Any]] = {}
        for node, deps in it or ():
            self.add_arc(node)
            for dep in deps:
                self.add_edge(node, dep)

    def add_arc(self, obj: Any) -> None:
        self.adjacent.setdefault(obj, [])

    def add_edge(self, a: Any, b: Any) -> None:
        """``a`` depends on ``b``."""
        self.add_arc(a)
        self.add_arc(b)
        self.adjacent[a].append(b)

    def edges(self) -> list[Any]:
        return [node for node, deps in self.adjacent.items() if deps]

    def topsort(self) -> list[Any]:
        """Every node after the nodes it depends on."""
        order: list[Any] = []
        seen: set[Any] = set()

        def visit(node: Any) -> None:
            if node in seen:
                return
            seen.add(node)
            for dep in self.adjacent.get(node, ()):
                visit(dep)
            order.append(node)

        for node in list(self.adjacent):
            visit(node)
        return order

    def to_dot(self, fh: TextIO) -> None:
        """The graph in Graphviz's dot language."""
        fh.write("digraph dependencies {\n")
        for node, deps in self.adjacent.items():
            fh.write(f'    "{node}";\n')
            for dep in deps:
                fh.write(f'    "{node}" -> "{dep}";\n')
        fh.write("}\n")

    def items(self) -> Iterator[tuple[Any, list[Any]]]:
        return iter(self.adjacent.items())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.adjacent)

    def __getitem__(self, node: Any) -> list[Any]:
        return self.adjacent[node]

    def __contains__(self, node: object) -> bool:
        return node in self.adjacent

    def __len__(self) -> int:
        return len(self.adjacent)


def _raise_failure(result: Any, value: Any) -> None:
    raise value if isinstance(value, BaseException) else TaskRevokedError(result.id)


class ResultExtras:
    """Mixed into AsyncResult (and EagerResult)."""

    TimeoutError = TimeoutError
    supports_native_join = True  # join_native waits on the database, as join does

    if TYPE_CHECKING:  # provided by AsyncResult
        id: str

        @property
        def state(self) -> str: ...

        @property
        def result(self) -> Any: ...

        @property
        def parent(self) -> Any: ...

        def get(self, *args: Any, **kwargs: Any) -> Any: ...

        def iterdeps(self, intermediate: bool = False) -> Iterator[tuple[Any, AsyncResult]]: ...

    def as_list(self) -> list[str]:
        """This result's id, then its parents' (a chain's results, last first)."""
        ids = [self.id]
        if self.parent is not None:
            ids.extend(self.parent.as_list())
        return ids

    def get_leaf(self) -> Any:
        """The value of the last result reached from this one through its children."""
        value = None
        for _, node in self.iterdeps():
            value = node.get()
        return value

    def build_graph(
        self, intermediate: bool = False, formatter: Callable[[Any], Any] | None = None
    ) -> DependencyGraph:
        """This result and its descendants as a DependencyGraph (each child depends on its
        parent); ``formatter`` maps each result to the node stored."""
        graph = DependencyGraph()
        shown = formatter or (lambda result: result)
        for parent, node in self.iterdeps(intermediate=intermediate):
            graph.add_arc(shown(node))
            if parent is not None:
                graph.add_edge(shown(parent), shown(node))
        return graph

    @property
    def graph(self) -> DependencyGraph:
        return self.build_graph()

    def maybe_throw(self, propagate: bool = True, callback: Callable[[str, Any], Any] | None = None) -> Any:
        """The task's value; with ``propagate``, raise its exception if it failed (or was
        revoked). ``callback(id, value)`` is called first, as Celery does."""
        state, value = self.state, self.result
        if state in states.PROPAGATE_STATES and propagate:
            _raise_failure(self, value)
        if callback is not None:
            callback(self.id, value)
        return value

    maybe_reraise = maybe_throw

    def throw(self, *args: Any, **kwargs: Any) -> None:
        """Raise the given exception (Celery passes it to the result's waiters)."""
        if args and isinstance(args[0], BaseException):
            raise args[0]
        raise TypeError("throw() takes the exception to raise")

    def revoke_by_stamped_headers(
        self, headers: Any, terminate: bool = False, signal: Any = None, **kwargs: Any
    ) -> None:
        raise NotImplementedError(
            "revoke_by_stamped_headers is not supported by pgtasks (signatures are not stamped); "
            "revoke the tasks by id: AsyncResult(id).revoke() or app.control.revoke([ids])"
        )


class ResultSetExtras:
    """Mixed into ResultSet (and GroupResult)."""

    supports_native_join = True

    if TYPE_CHECKING:  # provided by ResultSet
        results: list[AsyncResult]
        app: Celery | None

        def join(self, *args: Any, **kwargs: Any) -> list[Any]: ...

    @property
    def backend(self) -> Any:
        return (self.app or current_app()).backend

    def update(self, results: Iterable[AsyncResult]) -> None:
        """Add each of ``results`` not in the set yet."""
        self.results.extend(r for r in results if r not in self.results)

    def remove(self, result: AsyncResult | str) -> None:
        """Remove ``result`` (or the result with that id); KeyError if it is not in the set."""
        found = self._find(result)
        if found is None:
            raise KeyError(result)
        self.results.remove(found)

    def discard(self, result: AsyncResult | str) -> None:
        """Remove ``result`` if it is in the set."""
        found = self._find(result)
        if found is not None:
            self.results.remove(found)

    def clear(self) -> None:
        self.results.clear()

    def _find(self, result: AsyncResult | str) -> AsyncResult | None:
        wanted = result if isinstance(result, str) else result.id
        return next((r for r in self.results if r.id == wanted), None)

    def forget(self) -> None:
        """Delete every member's stored result now."""
        for result in self.results:
            result.forget()

    def maybe_throw(self, callback: Callable[[str, Any], Any] | None = None, propagate: bool = True) -> None:
        for result in self.results:
            result.maybe_throw(callback=callback, propagate=propagate)

    maybe_reraise = maybe_throw

    def join_native(
        self,
        timeout: float | None = None,
        propagate: bool = True,
        interval: float = 0.5,
        callback: Callable[[str, Any], Any] | None = None,
        no_ack: bool = True,
        on_message: Any = None,
        on_interval: Any = None,
        disable_sync_subtasks: bool = True,
        **kwargs: Any,
    ) -> list[Any]:
        """:meth:`join`: the database is the backend, there is no other native way."""
        return self.join(timeout=timeout, propagate=propagate, interval=interval, callback=callback)

    def iter_native(
        self, timeout: float | None = None, interval: float = 0.5, **kwargs: Any
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(task id, meta)`` for each member once it is ready, in order; ``meta`` as Celery's
        backends give it (``status``, ``result``, ``traceback``, ``task_id``, ``children``)."""
        for result in self.results:
            result.get(timeout=timeout, propagate=False, interval=interval)
            yield (
                result.id,
                {
                    "task_id": result.id,
                    "status": result.state,
                    "result": result.result,
                    "traceback": result.traceback,
                    "children": result.children or [],
                },
            )

    def then(self, callback: Any, on_error: Any = None, weak: bool = False) -> Any:
        raise NotImplementedError(
            "ResultSet.then is not supported by pgtasks (results are not promises); link a "
            "callback when sending: group(...) | callback, or chord(group)(callback)"
        )
