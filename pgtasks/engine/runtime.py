"""What the engine's own modules (a task's execution and steps, canvases, stored outcomes,
published states) use of an engine, as a protocol: they take the ``Engine`` that the layers
above hand them without importing ``core``, which imports them."""

from __future__ import annotations

from typing import Protocol

from pgtasks.engine.connection import DatabaseHandle
from pgtasks.engine.registry import Registry
from pgtasks.engine.serialization import Codec
from pgtasks.engine.settings import Settings
from pgtasks.sysdb.records import LinkResolver


class Runtime(Protocol):
    """An engine as the code running inside it sees it (``pgtasks.engine.core.Engine``)."""

    @property
    def settings(self) -> Settings:
        """The engine's settings (frozen)."""
        ...

    @property
    def registry(self) -> Registry:
        """The registered tasks."""
        ...

    @property
    def codec(self) -> Codec:
        """Serialization of arguments, results and step outputs."""
        ...

    @property
    def database(self) -> DatabaseHandle:
        """The handle on the system database (connected and migrated on first use)."""
        ...

    def link_resolver(self) -> LinkResolver:
        """What completes a task whose outcome other tasks wait for (chains, chords)."""
        ...

    def trusted_modules(self) -> set[str]:
        """Modules whose exception classes may be rebuilt from stored errors."""
        ...
