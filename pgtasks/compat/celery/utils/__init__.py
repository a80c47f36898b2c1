"""Celery's ``celery.utils``: the names Celery keeps here for older imports, each defined in
its own module (``celery.utils.functional``, ``.imports``, ``.nodenames``, ...); this package
only re-exports them."""

from __future__ import annotations

from pgtasks.compat.celery.utils.functional import chunks, first, is_list, maybe_list, memoize, noop
from pgtasks.compat.celery.utils.imports import gen_task_name, instantiate, qualname, symbol_by_name
from pgtasks.compat.celery.utils.imports import qualname as get_full_cls_name
from pgtasks.compat.celery.utils.nodenames import (
    NODENAME_SEP,
    default_nodename,
    gethostname,
    nodename,
    nodesplit,
    worker_direct,
)
from pgtasks.compat.celery.utils.serialization import b64decode, b64encode, strtobool
from pgtasks.compat.kombu.utils.objects import cached_property
from pgtasks.compat.kombu.utils.uuid import uuid
from pgtasks.compat.kombu.utils.uuid import uuid as gen_unique_id

__all__ = [
    "NODENAME_SEP",
    "b64decode",
    "b64encode",
    "cached_property",
    "chunks",
    "default_nodename",
    "first",
    "gen_task_name",
    "gen_unique_id",
    "get_full_cls_name",
    "gethostname",
    "instantiate",
    "is_list",
    "maybe_list",
    "memoize",
    "nodename",
    "nodesplit",
    "noop",
    "qualname",
    "strtobool",
    "symbol_by_name",
    "uuid",
    "worker_direct",
]
