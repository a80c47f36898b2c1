"""billiard's ``billiard.pool``: the name error trackers wrap (``Worker.workloop``)."""

from __future__ import annotations

from typing import Any

__all__ = ["Worker"]


class Worker:
    """billiard's pool worker: pgtasks' prefork children do not run it."""

    def workloop(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("pgtasks' prefork pool does not run billiard's worker loop")
