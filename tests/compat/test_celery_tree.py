"""``pgtasks/compat`` is shaped like Celery, read from its source with ``ast`` (every file, by
``rglob``) and checked in this process through the import hook:

- the rule: every module under ``compat/celery``, ``compat/kombu`` and ``compat/billiard`` is
  importable as its Celery name (``celery.X.Y`` for ``compat/celery/X/Y.py``) and resolves to
  that file; the rule's code names no module besides the roots, and the refused list names
  none that has a module;
- façades: a package's ``__init__.py`` only re-exports (no function or class but a module
  ``__getattr__``), and no other module imports one: each imports from the defining module;
- no cycle: the graph of every import of a pgtasks module, at module level and inside
  functions (``if TYPE_CHECKING:`` blocks excepted: type checkers read them, nothing runs
  them), has no cycle. A package's implicit import of its parents is not an edge of it:
- import order: importing any module of the tree first, as Python does it (parent packages
  first, then the module's imports in order), never reads a name from a module that has not
  finished running;
- an import inside a function of a pgtasks module says why (``# why:``), and the compat layer
  never imports the command line.
"""

from __future__ import annotations

import ast
import functools
import graphlib
import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pgtasks.compat
from pgtasks.compat import install
from pgtasks.compat.bridge.refused import REFUSED

COMPAT = Path(pgtasks.compat.__file__).parent
PACKAGE = "pgtasks.compat"
ROOTS = ("celery", "kombu", "billiard")
WHY_MARK = "# why:"

install()


def dotted(path: Path) -> str:
    parts = list(path.relative_to(COMPAT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


@functools.cache
def trees() -> dict[str, ast.Module]:
    """Every module of the tree, parsed once (read only)."""
    return {dotted(p): ast.parse(p.read_text(), str(p)) for p in sorted(COMPAT.rglob("*.py"))}


def is_package(name: str) -> bool:
    return (COMPAT.joinpath(*name.split(".")[2:]) / "__init__.py").exists()


def ancestors(name: str) -> list[str]:
    """The packages of the tree Python imports before ``name``, outermost first."""
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(2, len(parts))]


@dataclass(frozen=True)
class Imported:
    """One module an import statement loads, and the names it reads from it (``from m import
    a``: ``a``, unless ``m.a`` is a module); ``line`` for messages."""

    target: str
    reads: tuple[str, ...]
    line: int


def imported(node: ast.Import | ast.ImportFrom, known: set[str]) -> list[Imported]:
    """What ``node`` loads: ``from pkg import sub`` loads the submodule ``pkg.sub`` (reading
    nothing from ``pkg``); ``from mod import name`` loads ``mod`` and reads ``name``."""
    if isinstance(node, ast.Import):
        return [Imported(alias.name, (), node.lineno) for alias in node.names]
    if node.level or node.module is None:
        raise AssertionError(f"relative import at line {node.lineno}: use absolute imports")
    found = [
        Imported(f"{node.module}.{a.name}", (), node.lineno)
        for a in node.names
        if f"{node.module}.{a.name}" in known
    ]
    reads = tuple(a.name for a in node.names if f"{node.module}.{a.name}" not in known)
    return [*found, Imported(node.module, reads, node.lineno)] if reads or not found else found


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports run when the module runs, in order: top level, and inside top-level ``if``
    or ``try`` blocks, except ``if TYPE_CHECKING:``."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and not is_type_checking(node):
            pending[:0] = [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            pending[:0] = [
                *node.body,
                *[s for h in node.handlers for s in h.body],
                *node.orelse,
                *node.finalbody,
            ]


def function_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from (n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom)))


def runtime_imports(tree: ast.Module, known: set[str]) -> list[Imported]:
    """Every import that runs, at module level or when a function is called."""
    nodes = [*module_level_imports(tree), *function_imports(tree)]
    return [i for node in nodes for i in imported(node, known)]


def pgtasks_names(found: list[Imported]) -> set[str]:
    return {i.target for i in found if i.target == "pgtasks" or i.target.startswith("pgtasks.")}


# -- the rule -----------------------------------------------------------------------------------
def served_files() -> dict[str, Path]:
    """Celery's (kombu's, billiard's) name of every module under their folders."""
    files = {}
    for root in ROOTS:
        for path in sorted((COMPAT / root).rglob("*.py")):
            files[dotted(path).removeprefix(f"{PACKAGE}.")] = path
    return files


def test_every_module_under_celery_kombu_and_billiard_is_its_celery_name() -> None:
    files = served_files()
    assert {
        "celery.app.task",
        "celery.canvas",
        "celery.utils.time",
        "kombu.utils.json",
        "billiard.einfo",
    } <= set(files)
    for name, path in files.items():
        module = importlib.import_module(name)
        assert module.__file__ == str(path), name
        assert sys.modules[name] is sys.modules[f"{PACKAGE}.{name}"] is module, name
        assert module.__spec__ is not None and module.__spec__.name == f"{PACKAGE}.{name}", name


def test_the_rule_names_no_module_but_the_roots_and_the_refused_list_no_served_one() -> None:
    """No table of exceptions: the hook and install.py hold no Celery module name below a
    root (docstrings aside), and every refused name is one with no module of its own."""
    sources = [COMPAT / "bridge" / "install.py", Path(sys.modules["pgtasks_celery_hook"].__file__ or "")]
    for source in sources:
        tree = ast.parse(source.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        named = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and node.value.startswith(tuple(f"{root}." for root in ROOTS))
        ]
        assert named == [], f"{source.name} names modules: {named}"
    assert sorted(set(REFUSED) & set(served_files())) == []


# -- façades ------------------------------------------------------------------------------------
def test_packages_only_re_export_and_nothing_imports_them() -> None:
    modules = trees()
    known = set(modules)
    defining = [
        f"{name}: {node.name}"
        for name, tree in modules.items()
        if is_package(name)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.name != "__getattr__"
    ]
    assert defining == [], "packages define names instead of re-exporting them"
    through_facade = [
        f"{name}:{i.line} imports {i.target}"
        for name, tree in modules.items()
        for i in runtime_imports(tree, known)
        if i.target in known
        and is_package(i.target)
        and i.reads
        # a package imports its own subpackages to re-export them
        and not (is_package(name) and i.target.startswith(f"{name}."))
    ]
    assert through_facade == [], "import from the module that defines the name, not from a package"


# -- no cycle -----------------------------------------------------------------------------------
def import_graph() -> dict[str, set[str]]:
    modules = trees()
    known = set(modules)
    return {
        name: {t for t in pgtasks_names(runtime_imports(tree, known)) if t in known and t != name}
        for name, tree in modules.items()
    }


def test_the_import_graph_has_no_cycle() -> None:
    graphlib.TopologicalSorter(import_graph()).prepare()  # raises CycleError naming the cycle


# -- import order -------------------------------------------------------------------------------
def import_plan(modules: dict[str, ast.Module]) -> dict[str, list[Imported]]:
    """Each module's module-level imports, in the order they run."""
    known = set(modules)
    return {
        name: [i for n in module_level_imports(tree) for i in imported(n, known)]
        for name, tree in modules.items()
    }


def unfinished_reads(first: str, plan: dict[str, list[Imported]]) -> list[str]:
    """Import ``first`` as Python does, from the source: parents first, then each module-level
    import in order. What a ``from m import name`` reads from a module ``m`` still running."""
    running: set[str] = set()
    done: set[str] = set()
    problems: list[str] = []

    def load(name: str) -> None:
        for parent in ancestors(name):
            load(parent)
        if name in running or name in done or name not in plan:
            return
        running.add(name)
        for i in plan[name]:
            load(i.target)
            if i.reads and i.target in running:
                problems.append(f"{name}:{i.line} reads {', '.join(i.reads)} from {i.target}")
        running.discard(name)
        done.add(name)

    load(first)
    return problems


def test_importing_any_module_first_reads_no_module_still_running() -> None:
    plan = import_plan(trees())
    problems = {p: f"importing {first} first" for first in plan for p in unfinished_reads(first, plan)}
    assert problems == {}


# -- function-level imports, the command line ---------------------------------------------------
def test_an_import_inside_a_function_says_why() -> None:
    unexplained = []
    for path in sorted(COMPAT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        lines = path.read_text().splitlines()
        for node in function_imports(tree):
            if not pgtasks_names(imported(node, set())):
                continue  # an optional or outside dependency (Django, pytest, ...)
            said = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
            if WHY_MARK not in said:
                unexplained.append(f"{path.relative_to(COMPAT)}:{node.lineno}")
    assert unexplained == []


def test_compat_never_imports_the_cli() -> None:
    modules = trees()
    offenders = [
        name
        for name, tree in modules.items()
        if any(
            t == "pgtasks.cli" or t.startswith("pgtasks.cli.")
            for t in pgtasks_names(runtime_imports(tree, set()))
        )
    ]
    assert offenders == []


def test_the_checks_see_what_they_check() -> None:
    """Guards the tests above against passing by reading nothing."""
    modules = trees()
    assert len(modules) >= 100 and f"{PACKAGE}.celery.app.base" in modules
    graph = import_graph()
    assert f"{PACKAGE}.celery.app.task" in graph[f"{PACKAGE}.celery.app.base"]
    known = {"pgtasks.compat.celery", "pgtasks.compat.celery.states", "pgtasks.compat.bridge.eager"}
    sample = ast.parse(
        "from pgtasks.compat.celery import states, Celery\n"
        "def f():\n"
        "    from pgtasks.compat.bridge.eager import apply_eagerly\n"
        "if TYPE_CHECKING:\n"
        "    from pgtasks.compat.celery.app.base import Celery\n"
    )
    assert [(i.target, i.reads) for i in runtime_imports(sample, known)] == [
        ("pgtasks.compat.celery.states", ()),
        ("pgtasks.compat.celery", ("Celery",)),
        ("pgtasks.compat.bridge.eager", ("apply_eagerly",)),
    ]
    # A module that reads a name from a package still running its imports is reported.
    cyclic = {
        "pgtasks.compat": ast.parse("import pgtasks.compat.a.x\n"),
        "pgtasks.compat.a": ast.parse("from pgtasks.compat.b import y\nZ = 1\n"),
        "pgtasks.compat.a.x": ast.parse(""),
        "pgtasks.compat.b": ast.parse(""),
        "pgtasks.compat.b.y": ast.parse("from pgtasks.compat.a import Z\n"),
    }
    assert unfinished_reads("pgtasks.compat.b.y", import_plan(cyclic)) == [
        "pgtasks.compat.b.y:1 reads Z from pgtasks.compat.a"
    ]


@pytest.mark.parametrize("root", ROOTS)
def test_each_root_is_a_package_of_its_own(root: str) -> None:
    assert (COMPAT / root / "__init__.py").exists() and sys.modules[root] is sys.modules[f"{PACKAGE}.{root}"]
