"""Loading of named SQL statements and numbered migrations shipped with the package."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

_BLOCK = re.compile(r"^-- (name|fragment): (\w+)\s*$", re.MULTILINE)
_MIGRATION_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


def load_statements(dialect: str, replacements: dict[str, str]) -> dict[str, str]:
    """Read ``sql/<dialect>.sql`` into ``{name: statement}`` with the tokens replaced (see
    :func:`parse_statements`)."""
    text = resources.files("pgtasks.sysdb").joinpath("sql").joinpath(f"{dialect}.sql").read_text()
    for token, value in replacements.items():
        text = text.replace(token, value)
    return parse_statements(text, f"{dialect}.sql")


def parse_statements(text: str, source: str) -> dict[str, str]:
    """The statements of one SQL file's text. A block starts with ``-- name: <name>`` (a
    statement) or ``-- fragment: <name>`` (SQL that several statements share, written once):
    ``__<name>__`` in a statement stands for the fragment's text. Names are unique across both
    kinds; a fragment that no statement uses is an error."""
    parts = _BLOCK.split(text)
    statements: dict[str, str] = {}
    fragments: dict[str, str] = {}
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if name in statements or name in fragments:
            raise RuntimeError(f"duplicate SQL statement name {name!r} in {source}")
        (fragments if kind == "fragment" else statements)[name] = without_comment_lines(body)
    for name, fragment in fragments.items():
        token = f"__{name}__"
        users = [user for user, statement in statements.items() if token in statement]
        if not users:
            raise RuntimeError(f"SQL fragment {name!r} in {source} is used by no statement")
        for user in users:
            statements[user] = statements[user].replace(token, fragment)
    return statements


def without_comment_lines(sql: str) -> str:
    """``sql`` without its lines that are only a comment, and without blank lines: what is sent
    for each call is shorter, and psycopg converts a statement's placeholders once only for a
    statement of at most 4,096 bytes (a longer one is parsed again at every call)."""
    return "\n".join(
        line for line in sql.strip().splitlines() if line.strip() and not line.lstrip().startswith("--")
    )


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
