"""Random task ids (UUID version 4 strings) drawn from the OS's random source in blocks.

``uuid.uuid4()`` makes one ``os.urandom(16)`` system call per id: 1.9 us here against 0.75 us
for an id from a block, on a bulk enqueue that spends about 20 us per task. The ids are the
same shape and come from the same source, 256 at a time. The block is dropped in a forked
child, which must never hand out the ids its parent will.
"""

from __future__ import annotations

import os
import threading

_BLOCK_IDS = 256
_lock = threading.Lock()
_block = b""
_offset = 0


def _forget_block() -> None:
    global _block, _offset
    _block, _offset = b"", 0


os.register_at_fork(after_in_child=_forget_block)


def new_task_id() -> str:
    """A fresh random id, as ``str(uuid.uuid4())`` makes."""
    global _block, _offset
    with _lock:
        if _offset >= len(_block):
            _block, _offset = os.urandom(16 * _BLOCK_IDS), 0
        raw = bytearray(_block[_offset : _offset + 16])
        _offset += 16
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
