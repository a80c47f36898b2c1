"""Every method of the SystemDatabase interface is called somewhere in this conformance suite."""

from __future__ import annotations

import inspect
from pathlib import Path

from pgtasks.sysdb.interface import SystemDatabase

SUITE = Path(__file__).parent


def test_every_interface_method_is_exercised_by_the_suite() -> None:
    methods = [
        name for name, _ in inspect.getmembers(SystemDatabase, inspect.isfunction) if not name.startswith("_")
    ]
    assert len(methods) >= 40 and set(SystemDatabase.__abstractmethods__) <= set(methods)
    text = "".join(p.read_text() for p in sorted(SUITE.glob("test_*.py")) if p.name != Path(__file__).name)
    missing = [name for name in methods if f".{name}(" not in text]
    assert missing == [], f"SystemDatabase methods no test in {SUITE} calls: {missing}"
