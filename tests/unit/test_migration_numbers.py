"""Migration numbers may have gaps (a number reserved for a change merged later): a database
applies every migration it has not recorded, in order, and a gap filled later is applied then."""

from __future__ import annotations

from pgtasks.sysdb.sqlfiles import Migration, load_migrations, pending_migrations


def _numbered(*versions: int) -> list[Migration]:
    return [Migration(v, f"m{v}", "") for v in versions]


def test_a_gap_is_skipped_and_applied_once_filled() -> None:
    shipped = _numbered(1, 2, 4)
    assert [m.version for m in pending_migrations(shipped, set())] == [1, 2, 4]
    assert [m.version for m in pending_migrations(shipped, {1, 2})] == [4]
    assert pending_migrations(shipped, {1, 2, 4}) == []
    later = _numbered(1, 2, 3, 4)  # number 3 arrives after 4 was applied
    assert [m.version for m in pending_migrations(later, {1, 2, 4})] == [3]


def test_shipped_migrations_have_unique_increasing_numbers() -> None:
    for dialect in ("postgres", "sqlite"):
        versions = [m.version for m in load_migrations(dialect)]
        assert versions == sorted(set(versions)) and versions[0] == 1
