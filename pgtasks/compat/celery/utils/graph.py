"""Celery's ``celery.utils.graph``: :class:`DependencyGraph`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TextIO

__all__ = ["DependencyGraph"]


class DependencyGraph:
    """Nodes, each with the nodes it depends on (what ``AsyncResult.build_graph`` returns)."""

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
