"""Schedule sources that change while a beat runs (django-celery-beat's periodic tasks, edited
in Django's admin): a beat re-syncs each one when its version changes, and at least every
:data:`RESYNC_SECONDS`, so a time-bound change (a start time reached, an expiry passed) is
seen without an edit."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pgtasks.scheduler.definitions import ScheduleDefinition
from pgtasks.support.loops import ErrorPolicy, Loop

log = logging.getLogger("pgtasks.beat")

POLL_SECONDS = 1.0  # how often a source's version is read (one cheap query)
RESYNC_SECONDS = 60.0


@dataclass(frozen=True)
class LiveSource:
    """``definitions()`` returns the source's schedules now; ``version()`` returns a value that
    changes whenever they may have changed (a last-modified time); ``name`` is the source the
    schedules are stored under (the ones it stops returning become INACTIVE)."""

    name: str
    definitions: Callable[[], Sequence[ScheduleDefinition]]
    version: Callable[[], object]


class SourceFollower:
    """A daemon thread that keeps the stored schedules of ``sources`` equal to what they return,
    through ``sync(definitions, source_name)`` (a beat's). Errors are logged and retried at the
    next poll: a source that cannot be read leaves its stored schedules as they were."""

    def __init__(
        self, sources: Sequence[LiveSource], sync: Callable[[list[ScheduleDefinition], str], object]
    ) -> None:
        self._sources = list(sources)
        self._sync = sync
        self._seen: dict[str, tuple[object, float]] = {}
        self._failing: set[str] = set()  # sources warned about, until they sync again
        errors = ErrorPolicy(log, "following the schedule sources failed")
        self._loop = Loop("pgtasks-beat-sources", self._poll, POLL_SECONDS, errors, start_after=POLL_SECONDS)

    def sync_now(self) -> int:
        """Sync every source once (at a beat's start); return how many schedules they hold.
        An error propagates: a beat must not start on a source it cannot read."""
        return sum(self._sync_one(source) for source in self._sources)

    def start(self) -> None:
        if self._sources:
            self._loop.start()

    def stop(self) -> None:
        self._loop.stop(timeout=0)

    def _sync_one(self, source: LiveSource) -> int:
        version = source.version()
        definitions = list(source.definitions())
        self._sync(definitions, source.name)
        self._seen[source.name] = (version, time.monotonic())
        return len(definitions)

    def _poll(self) -> None:
        for source in self._sources:
            try:
                seen, at = self._seen.get(source.name, (None, 0.0))
                if source.version() == seen and time.monotonic() - at < RESYNC_SECONDS:
                    continue
                count = self._sync_one(source)
                log.info("synced %d schedules from %s", count, source.name)
                self._failing.discard(source.name)
            except Exception as exc:  # the source's database may be away: next poll
                if source.name not in self._failing:
                    log.warning("cannot sync the schedules of %s (retrying): %s", source.name, exc)
                self._failing.add(source.name)
