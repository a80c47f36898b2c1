"""Values a running task publishes for others to read, such as Celery's custom states
(``self.update_state(state="PROGRESS", meta={...})``), in ``workflow_events``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.engine.errors import ConfigurationError

if TYPE_CHECKING:
    from pgtasks.engine.runtime import Runtime

STATE_KEY = "state"


def record_task_state(engine: Runtime, task_id: str, state: str, meta: Any = None) -> None:
    """Publish the custom ``state`` (and its ``meta``) of a running task; the last one wins.
    Readers see it while the task runs; its final status replaces it."""
    if not isinstance(state, str) or not state:
        raise ConfigurationError(f"a task state must be a non-empty string, not {state!r}")
    tag, text = engine.codec.dumps({"state": state, "meta": meta}, f"meta of state {state!r}")
    if not engine.database.sysdb.task_event_set(task_id, STATE_KEY, text, tag):
        raise ConfigurationError(f"no task with id {task_id!r} to record state {state!r} on")


def task_state(engine: Runtime, task_id: str) -> tuple[str, Any] | None:
    """The last custom state published by ``task_id`` and its meta, or None."""
    found = engine.database.sysdb.task_event_get(task_id, STATE_KEY)
    if found is None:
        return None
    value = engine.codec.loads(found[0], found[1], f"state of task {task_id!r}")
    if not isinstance(value, dict) or not isinstance(value.get("state"), str):
        return None
    return value["state"], value.get("meta")
