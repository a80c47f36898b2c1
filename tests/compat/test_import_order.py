"""``pgtasks.compat`` reads bottom-up: read from its source with ``ast``, it never imports
``pgtasks.cli``, its module-level imports form no cycle, and an import inside a function says
why it is there (or is of an optional or outside dependency, such as Django)."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

import pgtasks.compat

COMPAT = Path(pgtasks.compat.__file__).parent
PACKAGE = "pgtasks.compat"
WHY_MARK = "# why:"


def modules() -> dict[str, ast.Module]:
    return {
        f"{PACKAGE}.{path.stem}" if path.stem != "__init__" else PACKAGE: ast.parse(
            path.read_text(), str(path)
        )
        for path in sorted(COMPAT.glob("*.py"))
    }


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (``from pkg import mod`` counts ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or node.module is None:
        raise AssertionError(f"relative import at line {node.lineno}: use absolute imports")
    return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports run when the module is imported: top level, and inside top-level ``if`` or
    ``try`` blocks, except ``if TYPE_CHECKING:`` (read by type checkers only)."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and not is_type_checking(node):
            pending.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            pending.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                pending.extend(handler.body)


def function_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield node


def test_compat_never_imports_the_cli() -> None:
    offenders = [
        f"{name}:{node.lineno}"
        for name, tree in modules().items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and any(n == "pgtasks.cli" or n.startswith("pgtasks.cli.") for n in imported_names(node))
    ]
    assert offenders == []


def test_the_module_level_imports_of_compat_form_no_cycle() -> None:
    trees = modules()
    graph = {
        name: {
            target
            for node in module_level_imports(tree)
            for target in imported_names(node)
            # pgtasks.compat itself (__init__) is the façade on top: ``from pgtasks.compat import
            # states`` depends on the submodule, not on the façade.
            if target in trees and target not in (name, PACKAGE)
        }
        for name, tree in trees.items()
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the cycle
    # Readable bottom-up, in the order of issue 12: no layer reaches a later one.
    layers = [
        f"{PACKAGE}.{m}"
        for m in (
            "states",
            "exceptions",
            "request",
            "result",
            "signatures",
            "workflows",
            "mapping",
            "canvas",
            "sending",
            "task",
            "app",
        )
    ]
    upward = [
        (lower, higher)
        for i, lower in enumerate(layers)
        for higher in layers[i + 1 :]
        if higher in reachable(graph, lower)
    ]
    assert upward == []


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = [start]
    while pending:
        for target in graph[pending.pop()] - seen:
            seen.add(target)
            pending.append(target)
    return seen


def test_every_import_inside_a_function_says_why_or_is_of_an_outside_dependency() -> None:
    unexplained = []
    for path in sorted(COMPAT.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        lines = path.read_text().splitlines()
        for node in function_imports(tree):
            if not any(n == "pgtasks" or n.startswith("pgtasks.") for n in imported_names(node)):
                continue  # an optional or outside dependency (Django, ...)
            said = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
            if WHY_MARK not in said:
                unexplained.append(f"{path.name}:{node.lineno}")
    assert unexplained == []


def test_the_checks_see_what_they_check() -> None:
    """Guards the three tests above against passing by reading nothing."""
    trees = modules()
    assert {f"{PACKAGE}.app", f"{PACKAGE}.canvas", f"{PACKAGE}.current", f"{PACKAGE}.workflows"} <= set(trees)
    app_imports = {t for node in module_level_imports(trees[f"{PACKAGE}.app"]) for t in imported_names(node)}
    assert f"{PACKAGE}.task" in app_imports
    sample = ast.parse("def f():\n    from pgtasks.compat import app\n")
    assert [imported_names(n) for n in function_imports(sample)] == [["pgtasks.compat", "pgtasks.compat.app"]]
