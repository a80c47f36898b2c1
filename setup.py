"""Everything about the package is in pyproject.toml. This file only adds
``pgtasks_celery.pth`` at the top of the installed tree (site-packages), which setuptools'
configuration cannot express: the line in it makes ``import celery`` find pgtasks' Celery layer
in every process (see pgtasks_celery_hook.py and docs/celery-migration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "pgtasks_celery.pth"


class BuildWithImportHook(build_py):
    """build_py, plus the .pth file beside the packages."""

    def run(self) -> None:
        super().run()
        self.copy_file(str(Path(__file__).parent / PTH), str(Path(self.build_lib) / PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH)]


class _WithHook:
    """An editable install's strategy, which also writes the .pth into the wheel."""

    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy

    def __call__(self, wheel: Any, files: Any, mapping: Any) -> None:
        self.strategy(wheel, files, mapping)
        wheel.writestr(PTH, (Path(__file__).parent / PTH).read_bytes())

    def __enter__(self) -> _WithHook:
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.strategy.__exit__(*exc)


class EditableWithImportHook(editable_wheel):
    """``pip install -e .``: the same .pth as a normal install."""

    def _select_strategy(self, *args: Any, **kwargs: Any) -> Any:
        return _WithHook(super()._select_strategy(*args, **kwargs))


setup(cmdclass={"build_py": BuildWithImportHook, "editable_wheel": EditableWithImportHook})
