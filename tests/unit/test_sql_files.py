"""The SQL loader: named statements and the fragments they share (one definition of what
pruning deletes, used by the prune and by its dry run)."""

from __future__ import annotations

from importlib import resources

import pytest

from pgtasks.sysdb.sqlfiles import load_statements, parse_statements, without_comment_lines

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
    rule = without_comment_lines(text.split("-- fragment: prunable_tasks\n", 1)[1].split("\n-- name:", 1)[0])
    statements = load_statements(dialect, {})
    assert "ws.status IN ('SUCCESS', 'ERROR', 'CANCELLED')" in rule
    assert rule in statements["tasks_prune_pick"] and rule in statements["tasks_prunable"]
