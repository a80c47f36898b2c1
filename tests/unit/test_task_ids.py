"""Task ids: each is a version 7 UUID string (the millisecond it was drawn, then random bits),
so that ids drawn later sort after earlier ones; a forked child never hands out the ids its
parent goes on to use."""

from __future__ import annotations

import os
import time
import uuid

from pgtasks.engine.ids import new_task_id, new_task_ids


def _check(ids: list[str], before_ms: int, after_ms: int) -> None:
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122 and str(parsed) == text
        assert before_ms <= parsed.int >> 80 <= after_ms  # the first 48 bits: Unix time in ms


def test_ids_are_distinct_version_7_uuids_of_the_time_they_were_drawn() -> None:
    before = time.time_ns() // 1_000_000
    ids = [new_task_id() for _ in range(2000)]  # several blocks
    _check(ids, before, time.time_ns() // 1_000_000)


def test_ids_drawn_together_are_distinct_version_7_uuids() -> None:
    before = time.time_ns() // 1_000_000
    ids = new_task_ids(600) + new_task_ids(1)
    assert len(ids) == 601
    _check(ids, before, time.time_ns() // 1_000_000)
    assert new_task_ids(0) == []


def test_ids_of_a_later_millisecond_sort_after_earlier_ones() -> None:
    """As text too: the task table's key is text, and a new key lands at its newest end."""
    first = [new_task_id() for _ in range(5)] + new_task_ids(5)
    start = time.monotonic()
    while time.time_ns() // 1_000_000 <= uuid.UUID(max(first)).int >> 80:
        assert time.monotonic() - start < 5, "the clock did not move"
    later = [new_task_id() for _ in range(5)] + new_task_ids(5)
    assert max(first) < min(later)
    assert max(uuid.UUID(i) for i in first) < min(uuid.UUID(i) for i in later)


def test_random_bits_differ_within_one_millisecond() -> None:
    """74 random bits per id: ids of one millisecond share only their first 48 bits and
    the version and variant."""
    ids = new_task_ids(2000)
    tails = {uuid.UUID(i).int & ((1 << 80) - 1) for i in ids}
    assert len(tails) == len(ids)
    assert len({i[15:18] for i in ids}) > 1000  # the 12 random bits after the version


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    new_task_id()  # a block is drawn and partly used
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, "\n".join(new_task_id() for _ in range(10)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split("\n"))
    os.waitpid(pid, 0)
    parent = {new_task_id() for _ in range(10)}
    assert len(child) == 10 and not child & parent
