"""The worker: claim loop, thread pool, batched completions, lease and recovery, signals."""

from pgtasks.worker.worker import Worker, WorkerOptions

__all__ = ["Worker", "WorkerOptions"]
