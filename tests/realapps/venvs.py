"""Venvs for the projects under tests/realapps, installed once and shared.

A project's third-party packages (and pgtasks' own dependencies) go into a venv kept under
``.venv-realapps/`` in this checkout, named by a hash of what it holds and built under a file
lock, so that test processes running at once, and later runs, share it. Each test module then
gets a light venv of its own: pgtasks' wheel built from this checkout (once for each state of
its sources, ``--no-deps``) and whatever the module installs there, with the shared packages
seen through a ``.pth`` file."""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.support.cli import REPO

CACHE = REPO / ".venv-realapps"


def _pip(python: Path) -> list[str]:
    return [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


def _install(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"


def _pgtasks_dependencies() -> list[str]:
    """pgtasks' own requirements, from the ``dependencies = [...]`` of pyproject.toml."""
    block = re.search(r"^dependencies = \[(.*?)^\]", (REPO / "pyproject.toml").read_text(), re.M | re.S)
    assert block is not None
    return re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)


def shared_packages(name: str, packages: list[str], no_deps: Sequence[str] = ()) -> Path:
    """The site-packages of the shared venv holding ``packages`` (``no_deps`` installed without
    their dependencies: those that declare celery)."""
    requirements = _pgtasks_dependencies()
    files = [Path(p) for p in packages if p.endswith(".txt")]
    key = repr((requirements, packages, no_deps, [f.read_text() for f in files], sys.version_info[:2]))
    venv = CACHE / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".installed").exists():
            _install([sys.executable, "-m", "venv", "--clear", str(venv)])
            wanted = [w for p in packages for w in (["-r", p] if p.endswith(".txt") else [p])]
            _install([*_pip(venv / "bin" / "python"), *requirements, *wanted])
            if no_deps:
                _install([*_pip(venv / "bin" / "python"), "--no-deps", *no_deps])
            (venv / ".installed").touch()
    [site] = (venv / "lib").glob("python3.*/site-packages")
    return site


def _pgtasks_wheel() -> Path:
    """pgtasks' wheel built from this checkout, once for each state of its sources."""
    sources = [REPO / "pyproject.toml", REPO / "setup.py", *sorted(REPO.glob("pgtasks_celery*"))]
    sources += sorted(
        p for p in (REPO / "pgtasks").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    digest = hashlib.sha256()
    for path in sources:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    wheels = CACHE / f"wheel-{digest.hexdigest()[:12]}"
    CACHE.mkdir(exist_ok=True)
    # one build at a time: the test processes share this checkout's build directory
    with open(Path(tempfile.gettempdir()) / "pgtasks-wheel-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not list(wheels.glob("pgtasks-*.whl")):
            for older in CACHE.glob("wheel-*"):
                shutil.rmtree(older)
            _install(
                [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(REPO)]
            )
    [wheel] = wheels.glob("pgtasks-*.whl")
    return wheel


def light_venv(root: Path, shared: Path, packages: Sequence[str] = ()) -> tuple[Path, list[str]]:
    """A venv in ``root`` (without pip: this interpreter's pip installs into it) with pgtasks'
    wheel from this checkout and ``packages`` (without their dependencies), that imports the
    shared venv's packages after its own; returns it and its pip command for more."""
    made = root / "venv"
    _install([sys.executable, "-m", "venv", "--without-pip", str(made)])
    pip = [sys.executable, "-m", "pip", "--python", str(made / "bin" / "python"), "install", "--quiet"]
    _install([*pip, "--no-deps", str(_pgtasks_wheel()), *packages])
    [site] = (made / "lib").glob("python3.*/site-packages")
    (site / "zz_realapps_shared.pth").write_text(f"{shared}\n")
    return made, pip
