"""Durable execution: enqueue, run with checkpointed steps, complete, recover."""

from pgtasks.engine.core import Engine
from pgtasks.engine.settings import Settings

__all__ = ["Engine", "Settings"]
