"""Task ids drawn in blocks from the OS's random source: each is a version 4 UUID string, and
a forked child never hands out the ids its parent goes on to use."""

from __future__ import annotations

import os
import uuid

from pgtasks.engine.ids import new_task_id, new_task_ids


def test_ids_are_distinct_version_4_uuids() -> None:
    ids = [new_task_id() for _ in range(2000)]  # several blocks
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text


def test_ids_drawn_together_are_distinct_version_4_uuids() -> None:
    ids = new_task_ids(600) + new_task_ids(1)
    assert len(set(ids)) == len(ids) == 601
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text
    assert new_task_ids(0) == []


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
