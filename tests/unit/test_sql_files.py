"""The SQL loader: named statements and the fragments they share (one definition of what
pruning deletes, used by the prune and by its dry run), loaded without comments and
indentation (short enough for psycopg's parsing cache)."""

from __future__ import annotations

from importlib import resources

import pytest

from pgtasks.sysdb.postgres import ASYNC_COMMIT, CLAIMED_COLUMNS, NOW_MS
from pgtasks.sysdb.sqlfiles import load_statements, parse_statements

TEXT = """-- header
-- fragment: finished
SELECT id FROM t WHERE done

-- name: pick
__finished__
LIMIT 10

-- name: count
SELECT count(*) FROM (
__finished__
) AS f
"""


def test_a_fragment_is_written_once_and_stands_in_each_statement_using_it() -> None:
    statements = parse_statements(TEXT, "x.sql")
    assert statements == {
        "pick": "SELECT id FROM t WHERE done\nLIMIT 10",
        "count": "SELECT count(*) FROM (\nSELECT id FROM t WHERE done\n) AS f",
    }


def test_comment_lines_and_blank_lines_are_not_sent() -> None:
    statements = parse_statements(
        "-- name: a\n-- what a does\nSELECT 1 -- kept: on a line of SQL\n\n  -- indented\nFROM t\n", "x.sql"
    )
    assert statements == {"a": "SELECT 1 -- kept: on a line of SQL\nFROM t"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n", "duplicate SQL statement name 'a' in x.sql"),
        ("-- fragment: a\nSELECT 1\n-- name: a\n__a__\n", "duplicate SQL statement name 'a' in x.sql"),
        (
            "-- fragment: unused\nSELECT 1\n-- name: a\nSELECT 2\n",
            "SQL fragment 'unused' in x.sql is used by no statement",
        ),
    ],
)
def test_duplicate_names_and_unused_fragments_are_refused(text: str, message: str) -> None:
    with pytest.raises(RuntimeError) as refused:
        parse_statements(text, "x.sql")
    assert str(refused.value) == message


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_the_prune_and_its_dry_run_select_the_same_tasks(dialect: str) -> None:
    text = (resources.files("pgtasks.sysdb") / "sql" / f"{dialect}.sql").read_text()
    rule = text.split("-- fragment: prunable_tasks\n", 1)[1].split("\n-- name:", 1)[0].strip()
    rule = parse_statements(f"-- name: rule\n{rule}", "x.sql")["rule"]  # as loaded: compacted
    statements = load_statements(dialect, {})
    assert "ws.status IN ('SUCCESS', 'ERROR', 'CANCELLED')" in rule
    assert rule in statements["tasks_prune_pick"] and rule in statements["tasks_prunable"]


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_statements_load_without_comment_lines_or_indentation(dialect: str) -> None:
    for name, text in load_statements(dialect, {}).items():
        lines = text.splitlines()
        assert all(line and line == line.strip() and not line.startswith("--") for line in lines), name


def test_the_claim_stays_short_enough_for_psycopg_to_parse_it_once() -> None:
    """psycopg caches the parsing of a statement's placeholders only up to 4 KiB of text; a
    claim parsed again at every call costs its thread 0.1 to 0.2 ms (docs/performance.md)."""
    replacements = {
        "__schema__": '"' + "s" * 63 + '"',
        "__now_ms__": NOW_MS,
        "__claimed_columns__": CLAIMED_COLUMNS,
    }
    statements = load_statements("postgres", replacements)
    claim = statements["tasks_claim"].replace("__claim_picked__", statements["claim_picked"])
    assert len(claim.replace("__async_commit__", ASYNC_COMMIT).encode()) <= 4096
