"""Loading of named SQL statements and numbered migrations shipped with the package."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_MIGRATION_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


def load_statements(dialect: str, replacements: dict[str, str]) -> dict[str, str]:
    """Read ``sql/<dialect>.sql`` into ``{name: statement}`` with the tokens replaced."""
    text = resources.files("pgtasks.sysdb").joinpath("sql").joinpath(f"{dialect}.sql").read_text()
    for token, value in replacements.items():
        text = text.replace(token, value)
    parts = _NAME.split(text)
    statements: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in statements:
            raise RuntimeError(f"duplicate SQL statement name {name!r} in {dialect}.sql")
        statements[name] = body.strip()
    return statements


@dataclass(frozen=True, slots=True)
class Migration:
    """One forward-only migration: its number, name and SQL (tokens not yet replaced)."""

    version: int
    name: str
    sql: str


def load_migrations(dialect: str) -> list[Migration]:
    """The migrations of a dialect, in version order. Numbers are unique and increasing but
    may have gaps (a number reserved for a change not merged yet): a database applies every
    migration whose number it has not recorded, so a gap filled later is applied then."""
    folder = resources.files("pgtasks.sysdb").joinpath("sql").joinpath("migrations").joinpath(dialect)
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text()))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions) or (versions and versions[0] < 1):
        raise RuntimeError(f"{dialect} migrations must have unique numbers from 1: {versions}")
    return found


def pending_migrations(migrations: list[Migration], applied: set[int]) -> list[Migration]:
    """The migrations whose numbers are not among the ``applied`` ones, in order."""
    return [m for m in migrations if m.version not in applied]


def load_declared_schema(dialect: str) -> str:
    """The declared schema of a dialect (``sql/<dialect>_schema.sql``): what migrations build."""
    return resources.files("pgtasks.sysdb").joinpath("sql").joinpath(f"{dialect}_schema.sql").read_text()
