"""The system database is private to the engine: the packages above it (worker, scheduler,
management, CLI, Celery layer) speak to the Engine, never to ``sysdb`` directly.

Read from the source with ``ast``: no module outside ``pgtasks/engine`` and ``pgtasks/sysdb``
touches an attribute named ``sysdb`` or ``_sysdb``, or imports the system database itself
(its interface, its dialects, ``open_system_database``, ``SystemDatabase``). Importing the
records and enums that cross the interface (``records``, ``schedule_records``, ``errors``,
``urls``) is fine; the CLI may also print the provisioning SQL (``provisioning``).
"""

from __future__ import annotations

import ast
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
        if isinstance(node, ast.Attribute) and node.attr in ("sysdb", "_sysdb"):
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
        "    return engine.sysdb, engine._sysdb\n"
    )
    found = _violations_in(sample, "pgtasks/worker/sample.py")
    assert [v.split(" ", 1)[1] for v in found] == [
        "imports ['SystemDatabase'] from pgtasks.sysdb",
        "imports pgtasks.sysdb.interface",
        "imports pgtasks.sysdb.postgres",
        "uses .sysdb",
        "uses ._sysdb",
    ]
