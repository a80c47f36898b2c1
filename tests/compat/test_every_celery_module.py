"""Every public module of the real Celery and kombu (as installed in `.venv-celery`, listed by
walking their packages) imports in a process where pgtasks is celery: served with working
behaviour, or importable with names that raise NotImplementedError naming the alternative
(``compat/bridge/refused.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.cli import REPO
from tests.support.redis import celery_python

LIST = """
import json, pkgutil, celery, kombu
names = [m.name for pkg in (celery, kombu) for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
print(json.dumps(sorted(n for n in names if not any(p.startswith("_") for p in n.split(".")))))
"""

IMPORT = """
import importlib, json, sys
failed = {}
for name in json.loads(sys.stdin.read()):
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def test_every_public_celery_and_kombu_module_imports() -> None:
    listed = subprocess.run(
        [str(celery_python()), "-c", LIST], capture_output=True, text=True, timeout=120, check=True
    )
    names = json.loads(listed.stdout)
    assert len(names) > 150 and "celery.bootsteps" in names and "kombu.transport.redis" in names
    imported = subprocess.run(
        [sys.executable, "-c", IMPORT],
        input=json.dumps(names),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={"PGTASKS_CELERY": "1", "PATH": "/usr/bin:/bin"},
    )
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout) == {}
