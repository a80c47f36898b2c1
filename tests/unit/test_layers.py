"""The dependency rule of docs/architecture.md, checked by reading every import under pgtasks/.

Imports point down only. Each module belongs to one layer (its package under ``pgtasks/``,
or ``public`` for the modules directly in ``pgtasks/``), and may import only the layers that
``ALLOWED`` gives for it. Every import counts: module level and inside functions, under
``TYPE_CHECKING`` too, ``import x`` and ``from x import y`` with relative imports resolved, and
``importlib.import_module("pgtasks....")`` with a literal name. Celery exists for ``compat``
alone: only ``compat`` and ``cli`` may import ``celery`` or ``kombu``, and no module outside
them has "celery" in its name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# The rule, as data for docs/architecture.md to quote: layer -> the layers it may import.
ALLOWED: dict[str, frozenset[str]] = {
    "support": frozenset({"support"}),
    "sysdb": frozenset({"sysdb", "support"}),
    "engine": frozenset({"engine", "sysdb", "support"}),
    "worker": frozenset({"worker", "engine", "sysdb", "support"}),
    "scheduler": frozenset({"scheduler", "engine", "sysdb", "support"}),
    "public": frozenset({"public", "worker", "scheduler", "engine", "sysdb", "support"}),
    "compat": frozenset({"compat", "public", "worker", "scheduler", "engine", "sysdb", "support"}),
    "dashboard": frozenset({"dashboard", "public", "scheduler", "engine", "sysdb", "support"}),
    "cli": frozenset(
        {"cli", "dashboard", "compat", "public", "worker", "scheduler", "engine", "sysdb", "support"}
    ),
}

# Packages under pgtasks/ and their layer; a module directly in pgtasks/ is "public".
PACKAGE_LAYERS: dict[str, str] = {
    "pgtasks.support": "support",
    "pgtasks.sysdb": "sysdb",
    "pgtasks.engine": "engine",
    "pgtasks.worker": "worker",
    "pgtasks.scheduler": "scheduler",
    "pgtasks.compat": "compat",
    "pgtasks.cli": "cli",
    "pgtasks.dashboard": "dashboard",
    "pgtasks.__main__": "cli",  # `python -m pgtasks` is the command line
}

# Third-party top-level names that only these layers may import.
CELERY_NAMES = frozenset({"celery", "kombu"})
CELERY_LAYERS = frozenset({"compat", "cli"})
# Identifiers (not strings or comments) that exist only for Celery: any containing "celery",
# and these names of Celery's API.
CELERY_IDENTIFIERS = frozenset({"beat_schedule", "add_periodic_task"})

ROOT = Path(__file__).resolve().parents[2] / "pgtasks"  # the source tree, not an installed copy


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement (or literal ``import_module`` call) of a pgtasks module."""

    module: str  # the importing module, dotted
    target: str  # the imported module, dotted and absolute
    path: str  # the importing file, relative to the repository
    line: int

    def __str__(self) -> str:
        return f"{self.module} -> {self.target} ({self.path}:{self.line})"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    """Every module of the pgtasks package, by dotted name."""
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    """The layer of a pgtasks module, or None for a package the table does not name."""
    for prefix, layer in PACKAGE_LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    if module == "pgtasks" or (module.count(".") == 1 and (ROOT / f"{module.split('.')[1]}.py").exists()):
        return "public"
    return None


def _resolve_from(node: ast.ImportFrom, package: str, known: set[str]) -> list[str]:
    """The modules a ``from ... import ...`` in ``package`` reaches: ``from pkg import sub``
    reaches the submodule ``pkg.sub`` when there is one, else ``pkg`` itself."""
    if node.level:
        parts = package.split(".")
        base = ".".join([*parts[: len(parts) - (node.level - 1)], *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def _literal_import_module(node: ast.Call) -> str | None:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imports_in(source: str, module: str, package: str, shown: str, known: set[str]) -> list[Import]:
    """Every import in ``source`` (the text of ``module``, inside ``package``), wherever it stands."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source, filename=shown)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = _resolve_from(node, package, known)
        elif isinstance(node, ast.Call):
            literal = _literal_import_module(node)
            targets = [literal] if literal else []
        found += [Import(module, target, shown, node.lineno) for target in targets]
    return sorted(found, key=lambda i: i.line)


def every_import() -> list[Import]:
    modules = all_modules()
    known = set(modules)
    found: list[Import] = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        shown = str(path.relative_to(ROOT.parent))
        found += imports_in(path.read_text(), name, package, shown, known)
    return found


def _top(target: str) -> str:
    return target.split(".", 1)[0]


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(name for name in all_modules() if layer_of(name) is None)
    assert not unplaced, "modules in no layer of PACKAGE_LAYERS: " + ", ".join(unplaced)


def test_imports_point_down_only() -> None:
    offending = []
    for imp in every_import():
        if _top(imp.target) != "pgtasks":
            continue
        source, target = layer_of(imp.module), layer_of(imp.target)
        if source is None or target is None:
            continue  # reported by test_every_module_has_a_layer
        if target not in ALLOWED[source]:
            offending.append(f"{imp}  [{source} may not import {target}]")
    assert not offending, f"{len(offending)} imports break the layer rule:\n" + "\n".join(offending)


def test_worker_and_scheduler_never_import_each_other() -> None:
    # Implied by ALLOWED; stated on its own so that a change of the table cannot drop it.
    pairs = {("worker", "scheduler"), ("scheduler", "worker")}
    offending = [
        str(imp)
        for imp in every_import()
        if _top(imp.target) == "pgtasks" and (layer_of(imp.module), layer_of(imp.target)) in pairs
    ]
    assert not offending, "worker and scheduler import each other:\n" + "\n".join(offending)


def test_celery_lives_in_compat_and_cli_only() -> None:
    offending = [
        f"{imp}  [imports Celery's {_top(imp.target)} outside compat and cli]"
        for imp in every_import()
        if _top(imp.target) in CELERY_NAMES and layer_of(imp.module) not in CELERY_LAYERS
    ]
    offending += [
        f"{name} ({path.relative_to(ROOT.parent)})  [a module named for Celery outside compat and cli]"
        for name, path in all_modules().items()
        if "celery" in name.lower() and layer_of(name) not in CELERY_LAYERS
    ]
    assert not offending, f"{len(offending)} Celery leaks below compat:\n" + "\n".join(offending)


def test_the_celery_layer_is_shaped_like_celery() -> None:
    """``compat/`` holds Celery's, kombu's and billiard's packages at their paths (``celery.X.Y``
    is ``compat/celery/X/Y.py``: tests/compat/test_celery_tree.py imports each by that name)
    and pgtasks' own side in ``bridge/``; every folder is a package."""
    compat = ROOT / "compat"
    folders = [p for p in compat.rglob("*") if p.is_dir() and p.name != "__pycache__"]
    top = sorted(p.name for p in compat.iterdir() if p.name != "__pycache__")
    assert top == ["__init__.py", "billiard", "bridge", "celery", "kombu"]
    assert [str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists()] == []
    assert (compat / "celery" / "app" / "task.py").exists() and len(folders) > 10


def identifiers_in(source: str) -> list[tuple[str, int]]:
    """The names a module defines or uses: variables, attributes, functions, classes, arguments,
    keywords and import aliases, with their lines."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.append((node.id, node.lineno))
        elif isinstance(node, ast.Attribute):
            found.append((node.attr, node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, node.lineno))
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            found.append((node.arg, node.lineno))
        elif isinstance(node, ast.alias):
            found.append((node.asname or node.name, node.lineno))
    return found


def test_no_celery_identifiers_below_compat() -> None:
    offending = [
        f"{name} ({path.relative_to(ROOT.parent)}:{line})  [{identifier}]"
        for name, path in all_modules().items()
        if layer_of(name) not in CELERY_LAYERS
        for identifier, line in sorted(set(identifiers_in(path.read_text())), key=lambda i: i[1])
        if "celery" in identifier.lower() or identifier in CELERY_IDENTIFIERS
    ]
    assert not offending, f"{len(offending)} Celery names below compat:\n" + "\n".join(offending)


def test_the_reader_finds_nested_relative_and_literal_imports() -> None:
    source = (
        "import pgtasks.sysdb\n"
        "def f():\n"
        "    from ..compat import app, helper\n"
        "    from . import beat\n"
        "    if True:\n"
        "        import importlib\n"
        "        importlib.import_module('pgtasks.cli.main')\n"
    )
    known = {"pgtasks.compat", "pgtasks.compat.app", "pgtasks.scheduler.beat"}
    found = imports_in(source, "pgtasks.scheduler.x", "pgtasks.scheduler", "x.py", known)
    assert [(i.target, i.line) for i in found] == [
        ("pgtasks.sysdb", 1),
        ("pgtasks.compat.app", 3),
        ("pgtasks.compat", 3),
        ("pgtasks.scheduler.beat", 4),
        ("importlib", 6),
        ("pgtasks.cli.main", 7),
    ]
