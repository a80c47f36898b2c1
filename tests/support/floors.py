"""The runtime dependencies of pyproject.toml pinned at their lowest allowed versions
(``>=X`` becomes ``==X``): what `make test-floors` installs to prove the floors are true."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def floor_pins(pyproject: Path = PYPROJECT) -> list[str]:
    """``name[extras]==lowest`` for every runtime dependency; each must state a ``>=`` floor."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = []
    for requirement in dependencies:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+(?:\[[^\]]+\])?)\s*>=\s*([0-9][^,;\s]*)\s*", requirement)
        if match is None:
            raise SystemExit(f"pyproject dependency {requirement!r} has no plain '>=' floor")
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


if __name__ == "__main__":
    sys.stdout.write("\n".join(floor_pins()) + "\n")
