"""Named crash points for fault-injection tests. Off unless ``PGTASKS_CRASHPOINT`` names one.

``PGTASKS_CRASHPOINT="after_step_body_before_checkpoint:function_id=2"`` makes the process
SIGKILL itself when it reaches that point with ``function_id == 2``. Filters are optional
``key=value`` pairs separated by commas, compared with the point's attributes as text.
``PGTASKS_CRASHPOINT_MODE=raise`` raises :class:`CrashPointReached` instead of dying.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from pgtasks.sysdb.errors import DatabaseUnavailable

ENV = "PGTASKS_CRASHPOINT"
MODE_ENV = "PGTASKS_CRASHPOINT_MODE"

POINTS = frozenset(
    {
        "after_claim_commit",
        "before_step_body",
        "after_step_body_before_checkpoint",
        "after_checkpoint_commit",
        "before_outcome",
        "after_outcome_commit",
        "after_replace_commit",
        "after_fire_before_commit",
    }
)


class CrashPointReached(DatabaseUnavailable, ConnectionError):
    """Raised at a crash point in ``raise`` mode; looks like a lost connection."""


def _parse(spec: str) -> tuple[str, dict[str, str]]:
    name, _, filters = spec.partition(":")
    if name not in POINTS:
        raise ValueError(f"{ENV}={spec!r}: unknown crash point {name!r}; known: {sorted(POINTS)}")
    pairs = dict(item.split("=", 1) for item in filters.split(",") if item)
    return name, pairs


_ARMED = _parse(os.environ[ENV]) if os.environ.get(ENV) else None


def crashpoint(name: str, **attrs: Any) -> None:
    """Die (or raise) here if the environment armed this point and its filters match."""
    if _ARMED is None or _ARMED[0] != name:
        return
    if any(str(attrs.get(key)) != value for key, value in _ARMED[1].items()):
        return
    if os.environ.get(MODE_ENV) == "raise":
        raise CrashPointReached(f"crash point {name} reached")
    os.kill(os.getpid(), signal.SIGKILL)
