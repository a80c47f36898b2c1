"""The import rule, and :func:`install`, which makes it this process's.

Celery's ``celery.X.Y`` (likewise kombu's ``kombu.X.Y`` and billiard's ``billiard.X.Y``) is
the module ``pgtasks/compat/celery/X/Y.py`` (``X/Y/__init__.py`` for a package): imported as
``pgtasks.compat.celery.X.Y`` and aliased under Celery's name in ``sys.modules``, one module
object under both names. A name no module of ``compat/`` has is served by a refusing module
when the refused list names it (refused.py), and is not found otherwise (a ModuleNotFoundError
saying pgtasks does not serve it). billiard's names are served only where the real billiard is
not installed. There is no other table.

:func:`install` removes a real celery or kombu imported before, puts the import hook's finder
(``pgtasks_celery_hook``) first on ``sys.meta_path`` and aliases the roots (``celery``,
``kombu``, and ``billiard`` where the real one is absent); every other name is served on its
first import. If the real Celery is installed, ``install()`` still wins for this process and
says so once at debug level. ``install()`` is idempotent; ``uninstall()`` removes the names
again (for tests).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
import threading
import types
from _thread import get_ident

from pgtasks.compat.bridge.refused import REFUSED, refused_module
from pgtasks_celery_hook import CeleryFinder

__all__ = ["find_spec", "install", "installed", "served", "uninstall"]

log = logging.getLogger("pgtasks.compat")

ROOTS = ("celery", "kombu", "billiard")
PACKAGE = "pgtasks.compat"
MARK = "__pgtasks_compat__"
DOCS = "see docs/celery-migration.md"

_lock = threading.RLock()
_installing: set[int] = set()  # threads inside install(): what they import is not served
_moved: list[tuple[CeleryFinder, int | None]] = []  # the finder install() put first; where it was
_real_celery_noted: list[bool] = []


def _root(name: str) -> str:
    return name.partition(".")[0]


def _ours(module: object) -> bool:
    return bool(getattr(module, MARK, False))


def _really_installed(name: str) -> bool:
    """Whether the distribution's own package is on the path, asking only the path finder:
    the import hook would answer with pgtasks' modules."""
    try:
        return importlib.machinery.PathFinder.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _real_billiard() -> bool:
    present = sys.modules.get("billiard")
    return (present is not None and not _ours(present)) or _really_installed("billiard")


def served(name: str) -> types.ModuleType | None:
    """The module the rule serves for Celery's (kombu's, billiard's) ``name``:
    ``pgtasks.compat.<name>``, else the refusing module of a refused name; None when there is
    neither."""
    target = f"{PACKAGE}.{name}"
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if not missing.startswith(f"{PACKAGE}.") or not (target + ".").startswith(missing + "."):
            raise  # the module is there; something it imports is missing (pytest, ...)
        if name not in REFUSED:
            return None
        module = refused_module(name)
    setattr(module, MARK, True)
    return module


class _Alias(importlib.abc.Loader):
    """The loader of a name the rule serves: hands over the module imported already, and gives
    it back its own ``__spec__`` (the import system sets the alias's)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        if self.spec is not None:
            module.__spec__ = self.spec

    def get_code(self, fullname: str) -> types.CodeType | None:
        """The served module's code: what ``python -m celery`` runs (runpy asks the loader of
        ``celery.__main__`` for it, to run it as ``__main__``)."""
        loader = self.spec.loader if self.spec is not None else None
        get_code = getattr(loader, "get_code", None)
        if get_code is None or self.spec is None:
            raise ImportError(f"no code for {fullname!r}: pgtasks serves it as {self.module.__name__!r}")
        code: types.CodeType | None = get_code(self.spec.name)
        return code


def find_spec(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """What the import hook's finder answers for ``fullname``: a spec aliasing the module the
    rule serves (installing the rule first); None to let the next finder answer (a real
    package imported before answers for its own modules, and the real billiard for billiard's
    names); else a ModuleNotFoundError saying what pgtasks serves."""
    root = _root(fullname)
    if root not in ROOTS or get_ident() in _installing:
        return None
    present = sys.modules.get(root)
    if present is not None and not _ours(present):
        return None
    if root == "billiard" and _real_billiard():
        return None
    install()
    # A root is in sys.modules now (install() put it there): handed over through the spec,
    # since the import system, finding a name in sys.modules, would load its file again.
    module = sys.modules.pop(fullname, None) if fullname == root else None
    if module is None:
        module = served(fullname)
    if module is None:
        if root == "billiard":
            return None  # only the names the integrations use; nothing else pretends to exist
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: pgtasks serves Celery's public modules, and not this one "
            f"({DOCS}; `pgtasks celery-check` lists what an app uses)",
            name=fullname,
        )
    # The origin is the served module's file: runpy makes it sys.argv[0] (python -m celery).
    origin = module.__spec__.origin if module.__spec__ is not None else None
    return importlib.machinery.ModuleSpec(
        fullname, _Alias(module), origin=origin, is_package=hasattr(module, "__path__")
    )


def installed() -> bool:
    """True when ``import celery`` gives pgtasks' module in this process."""
    module = sys.modules.get("celery")
    return module is not None and _ours(module)


def _note_real_celery() -> None:
    if _real_celery_noted:
        return
    _real_celery_noted.append(True)
    if ("celery" in sys.modules and not installed()) or _really_installed("celery"):
        log.debug("the real celery package is installed; pgtasks.compat.install() takes its place here")


def _finder_first() -> None:
    """The import hook's finder first on ``sys.meta_path`` (added when the hook is off): every
    name below the roots must reach the rule before the path finder, which would load the
    files of ``compat/celery/`` a second time under Celery's names."""
    for index, finder in enumerate(sys.meta_path):
        if isinstance(finder, CeleryFinder):
            if index:
                sys.meta_path.insert(0, sys.meta_path.pop(index))
                _moved.append((finder, index))
            return
    added = CeleryFinder()
    sys.meta_path.insert(0, added)
    _moved.append((added, None))


def install() -> None:
    """Make the import rule this process's (idempotent; see the module docstring)."""
    with _lock:
        if installed():
            return
        thread = get_ident()
        _installing.add(thread)
        try:
            _note_real_celery()
            for name in [n for n in sys.modules if _root(n) in ("celery", "kombu")]:
                del sys.modules[name]  # a real celery imported earlier no longer answers
            _finder_first()
            roots = [root for root in ROOTS if root != "billiard" or not _real_billiard()]
            modules = {root: served(root) for root in roots}
        finally:
            _installing.discard(thread)
        # "celery" last: installed() is true only once every root is in place
        for root in sorted(modules, key=lambda r: r == "celery"):
            sys.modules[root] = modules[root]  # type: ignore[assignment]  # roots are always served


def uninstall() -> None:
    """Remove the names the rule served and put the hook's finder back where it was (the next
    ``import celery`` finds the real one)."""
    with _lock:
        for name in [n for n, m in list(sys.modules.items()) if _root(n) in ROOTS and _ours(m)]:
            del sys.modules[name]
        while _moved:
            finder, index = _moved.pop()
            sys.meta_path.remove(finder)
            if index is not None:
                sys.meta_path.insert(index, finder)
