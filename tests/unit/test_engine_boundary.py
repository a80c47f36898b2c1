"""The system database is private to the engine: the packages above it (worker, scheduler,
management, CLI, Celery layer) speak to the Engine, never to ``sysdb`` directly.

Read from the source with ``ast``: no module outside ``pgtasks/engine`` and ``pgtasks/sysdb``
touches an attribute named ``sysdb``, ``_sysdb`` or ``database`` (the engine's handle), or
imports the system database itself (its interface, its dialects, ``open_system_database``,
``SystemDatabase``). Importing the records and enums that cross the interface (``records``,
``schedule_records``, ``errors``, ``urls``) is fine; the CLI may also print the provisioning
SQL (``provisioning``).

Inside the engine, one handle (``engine/connection.py``) opens the system database and every
other module reaches it through that handle (``database.sysdb``); the modules of the engine
import each other without a cycle, and none but the package's ``__init__`` imports ``core``
(the facades get the handle, not the engine). The dashboard acts through the management API
of App and Client, never through an engine.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pgtasks

PACKAGE = Path(pgtasks.__file__).parent
INSIDE = ("engine", "sysdb")
SHARED_MODULES = frozenset(
    {"pgtasks.sysdb.records", "pgtasks.sysdb.schedule_records", "pgtasks.sysdb.errors", "pgtasks.sysdb.urls"}
)
CLI_MODULES = frozenset({"pgtasks.sysdb.provisioning"})
FORBIDDEN_NAMES = frozenset({"SystemDatabase", "open_system_database", "EnqueueListener"})


def _modules_above_the_engine() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] not in INSIDE)


def _violations(path: Path) -> list[str]:
    return _violations_in(path.read_text(), path.relative_to(PACKAGE.parent).as_posix())


def _violations_in(source: str, relative: str) -> list[str]:
    allowed = SHARED_MODULES | (CLI_MODULES if relative.startswith("pgtasks/cli/") else frozenset())
    found = []
    for node in ast.walk(ast.parse(source, relative)):
        where = f"{relative}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr in ("sysdb", "_sysdb", "database"):
            found.append(f"{where} uses .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            module = node.module
            if module == "pgtasks.sysdb":
                names = {alias.name for alias in node.names}
                if names & FORBIDDEN_NAMES or "*" in names:
                    found.append(f"{where} imports {sorted(names)} from pgtasks.sysdb")
            elif module.startswith("pgtasks.sysdb.") and module not in allowed:
                found.append(f"{where} imports {module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pgtasks.sysdb") and alias.name not in allowed:
                    found.append(f"{where} imports {alias.name}")
    return found


def test_the_scan_sees_the_layers_above_the_engine() -> None:
    scanned = {p.relative_to(PACKAGE).parts[0] for p in _modules_above_the_engine()}
    assert {"worker", "scheduler", "cli", "compat", "management.py", "app.py"} <= scanned


def test_nothing_above_the_engine_reaches_the_system_database() -> None:
    found = [v for path in _modules_above_the_engine() for v in _violations(path)]
    assert found == [], "\n".join(found)


def test_the_check_catches_each_way_in() -> None:
    sample = (
        "from pgtasks.sysdb import SystemDatabase\n"
        "from pgtasks.sysdb.interface import EnqueueListener\n"
        "import pgtasks.sysdb.postgres\n"
        "from pgtasks.sysdb.records import Status\n"
        "def f(engine):\n"
        "    return engine.sysdb, engine._sysdb, engine.database\n"
    )
    found = _violations_in(sample, "pgtasks/worker/sample.py")
    assert [v.split(" ", 1)[1] for v in found] == [
        "imports ['SystemDatabase'] from pgtasks.sysdb",
        "imports pgtasks.sysdb.interface",
        "imports pgtasks.sysdb.postgres",
        "uses .sysdb",
        "uses ._sysdb",
        "uses .database",
    ]


# -- inside the engine -------------------------------------------------------------------------
ENGINE = PACKAGE / "engine"
HANDLE_MODULE = "pgtasks/engine/connection.py"
OPENERS = frozenset({"open_system_database", "open_replica"})
# pgtasks modules an engine module imports inside a function, with the reason (none today).
FUNCTION_LEVEL_IMPORTS: Mapping[tuple[str, str], str] = {}


@dataclass(frozen=True, slots=True)
class EngineImport:
    """One import of a pgtasks.engine module by another."""

    module: str
    target: str
    line: int
    in_function: bool

    def __str__(self) -> str:
        where = "in a function" if self.in_function else "at module level"
        return f"{self.module} -> {self.target} (line {self.line}, {where})"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """The modules an absolute import names (``from pkg import sub`` names ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def engine_imports_in(source: str, module: str, known: set[str]) -> list[EngineImport]:
    """The imports of pgtasks.engine modules in ``source``: module level (under ``if
    TYPE_CHECKING:`` too) and inside functions."""
    found: list[EngineImport] = []

    def visit(node: ast.AST, in_function: bool) -> Iterator[EngineImport]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.ImportFrom) and child.level:
                    raise AssertionError(f"{module}:{child.lineno}: a relative import; write it absolute")
                for target in _imported(child, known):
                    if target == "pgtasks.engine" or target.startswith("pgtasks.engine."):
                        yield EngineImport(module, target, child.lineno, in_function)
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from visit(child, nested)

    found.extend(visit(ast.parse(source, module), False))
    return found


def _engine_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ENGINE.rglob("*.py"))}


def _engine_graph() -> list[EngineImport]:
    modules = _engine_modules()
    known = set(modules)
    return [imp for name, path in modules.items() for imp in engine_imports_in(path.read_text(), name, known)]


def find_cycle(edges: Mapping[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph ``edges`` as the list of its modules (the first repeated
    at the end), or None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := walk(start)) is not None:
            return cycle
    return None


def test_the_engine_modules_import_each_other_without_a_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for imp in _engine_graph():
        edges.setdefault(imp.module, set()).add(imp.target)
    assert len(edges) > 20, "the scan found too few engine modules"
    cycle = find_cycle(edges)
    assert cycle is None, "an import cycle inside pgtasks/engine: " + " -> ".join(cycle or [])


def test_only_the_package_imports_the_engine_core() -> None:
    found = [str(imp) for imp in _engine_graph() if imp.target == "pgtasks.engine.core"]
    assert found == ["pgtasks.engine -> pgtasks.engine.core (line 3, at module level)"]


def test_the_engine_imports_its_modules_inside_functions_only_for_a_reason() -> None:
    found = [
        str(imp)
        for imp in _engine_graph()
        if imp.in_function and (imp.module, imp.target) not in FUNCTION_LEVEL_IMPORTS
    ]
    assert found == [], "\n".join(found)


def test_the_import_reader_sees_every_kind_of_import() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from pgtasks.engine import tracing\n"
        "if TYPE_CHECKING:\n"
        "    from pgtasks.engine.core import Engine\n"
        "def f():\n"
        "    import pgtasks.engine.steps\n"
        "class C:\n"
        "    def g(self):\n"
        "        from pgtasks.engine.errors import TaskError\n"
    )
    known = {"pgtasks.engine", "pgtasks.engine.tracing", "pgtasks.engine.core"}
    found = engine_imports_in(source, "pgtasks.engine.sample", known)
    assert [(i.target, i.line, i.in_function) for i in found] == [
        ("pgtasks.engine.tracing", 2, False),
        ("pgtasks.engine.core", 4, False),
        ("pgtasks.engine.steps", 6, True),
        ("pgtasks.engine.errors", 9, True),
    ]


def test_the_cycle_finder_finds_cycles_and_only_them() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}) == ["b", "c", "d", "b"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def _handle_bypasses(source: str, relative: str) -> list[str]:
    """Ways around the handle: a ``_sysdb`` anywhere, or opening the system database outside
    the handle's module."""
    found = []
    for node in ast.walk(ast.parse(source, relative)):
        where = f"{relative}:{getattr(node, 'lineno', 0)}"
        name = _name_of(node)
        if name == "_sysdb":
            found.append(f"{where} names _sysdb")
        elif name in OPENERS and relative != HANDLE_MODULE:
            found.append(f"{where} opens the system database ({name})")
    return found


def _name_of(node: ast.AST) -> str | None:
    """The name an attribute, a variable or a function definition uses."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    return None


def test_the_engine_reaches_the_system_database_through_its_handle_only() -> None:
    outside_sysdb = [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] != "sysdb"]
    found = [
        v
        for path in outside_sysdb
        for v in _handle_bypasses(path.read_text(), path.relative_to(PACKAGE.parent).as_posix())
    ]
    assert found == [], "\n".join(found)


def test_the_handle_check_catches_a_bypass() -> None:
    sample = (
        "from pgtasks.sysdb import open_system_database\n"
        "def f(engine):\n"
        "    return engine._sysdb, open_system_database('sqlite://')\n"
    )
    found = _handle_bypasses(sample, "pgtasks/engine/sample.py")
    assert [v.split(" ", 1)[1] for v in found] == [
        "names _sysdb",
        "opens the system database (open_system_database)",
    ]
    assert _handle_bypasses(sample.replace("engine._sysdb, ", ""), HANDLE_MODULE) == []


# -- the dashboard -----------------------------------------------------------------------------
# Engine modules the dashboard may import: errors, the parsers of queue limits, error summaries.
DASHBOARD_ENGINE_MODULES = frozenset(
    {"pgtasks.engine.errors", "pgtasks.engine.flow", "pgtasks.engine.failures"}
)


def _dashboard_reaches(source: str, relative: str) -> list[str]:
    """Where a dashboard module goes past the management API: an ``.engine`` attribute, or an
    engine module other than its helpers."""
    found = []
    for node in ast.walk(ast.parse(source, relative)):
        where = f"{relative}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr == "engine":
            found.append(f"{where} uses .engine")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in names:
                if module.startswith("pgtasks.engine") and module not in DASHBOARD_ENGINE_MODULES:
                    found.append(f"{where} imports {module}")
    return found


def test_the_dashboard_acts_through_the_management_api() -> None:
    paths = sorted((PACKAGE / "dashboard").rglob("*.py"))
    assert len(paths) > 5
    found = [
        v for p in paths for v in _dashboard_reaches(p.read_text(), p.relative_to(PACKAGE.parent).as_posix())
    ]
    assert found == [], "\n".join(found)


def test_the_dashboard_check_catches_the_engine() -> None:
    sample = (
        "from pgtasks.engine.core import Engine\n"
        "from pgtasks.engine.errors import PgtasksError\n"
        "def f(manager):\n"
        "    return manager.engine.admin\n"
    )
    found = _dashboard_reaches(sample, "pgtasks/dashboard/sample.py")
    assert [v.split(" ", 1)[1] for v in found] == ["imports pgtasks.engine.core", "uses .engine"]
