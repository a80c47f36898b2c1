"""kombu's ``kombu.utils``: the names Celery libraries take from it. Each is defined in the
module kombu defines it in (``kombu.utils.objects``, ``.imports``, ``.uuid``); this package
only re-exports."""

from __future__ import annotations

from pgtasks.compat.kombu.utils.imports import symbol_by_name
from pgtasks.compat.kombu.utils.objects import cached_property
from pgtasks.compat.kombu.utils.uuid import uuid

__all__ = ["cached_property", "symbol_by_name", "uuid"]
