"""How the dashboard shows values: times, ages and stored JSON (pretty-printed when it parses)."""

from __future__ import annotations

import datetime as dt
import json

from pgtasks.sysdb.records import QueueSettings


def iso(ms: int | None) -> str:
    """Epoch milliseconds as ISO 8601 UTC to the millisecond, or an empty string."""
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")


def age(seconds: float | None) -> str:
    """``3.2 s``, ``4 min``, ``2.1 h``; empty for None."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def millis(ms: int | None) -> str:
    """A latency: ``850 ms``, ``3.2 s``, ``4 min``; empty for None."""
    if ms is None:
        return ""
    return f"{ms} ms" if ms < 1000 else age(ms / 1000)


def duration(start_ms: int | None, end_ms: int | None) -> str:
    if start_ms is None or end_ms is None:
        return ""
    return f"{(end_ms - start_ms) / 1000:.3f} s"


def kept(queue: QueueSettings) -> str:
    """How long a queue keeps finished tasks: ``default`` (the app's), ``never``, or an age."""
    if queue.result_expires_sec is None:
        return "default"
    return "never" if queue.result_expires_sec == 0 else age(queue.result_expires_sec)


def kept_input(queue: QueueSettings) -> str:
    """The same, as the queue form's field holds it: empty, ``never`` or seconds."""
    if queue.result_expires_sec is None:
        return ""
    return "never" if queue.result_expires_sec == 0 else f"{queue.result_expires_sec:g}"


def pretty(text: str | None) -> str:
    """Stored JSON indented for reading; other text as it is."""
    if text is None:
        return ""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text
