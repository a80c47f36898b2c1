"""What Celery's ``app.conf`` answers beyond reading a setting: the settings Celery derives
from others (``broker_read_url`` falls back to ``broker_url``, ``task_default_exchange`` to
``task_default_queue``, ...), and the lookups of ``celery.app.utils.Settings``
(``find_option``, ``get_by_parts``, ``value_set_for``, ``without_defaults``, ``iteritems``...).
"""

from __future__ import annotations

import os
from collections import Counter, namedtuple
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.app.defaults import DEFAULTS

__all__ = ["Option", "SettingsQueries", "searchresult"]

searchresult = namedtuple("searchresult", ("namespace", "key", "type"))

# A setting's namespace is the word before its first "_" when several settings share it
# (``task_always_eager``: ``task``); ``enable_utc`` and ``timezone`` have none.
_PREFIXES = Counter(name.partition("_")[0] for name in DEFAULTS if "_" in name)
NAMESPACES = frozenset(prefix for prefix, settings in _PREFIXES.items() if settings > 1)
_TYPES = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "string"),
    (dict, "dict"),
    ((list, tuple), "tuple"),
)


class Option:
    """A setting's default and the type of its values, as ``find_option`` reports them."""

    def __init__(self, default: Any = None, type: str | None = None) -> None:
        self.default = default
        self.type = type or next((name for kind, name in _TYPES if isinstance(default, kind)), "any")

    def __repr__(self) -> str:
        return f"<Option: type->{self.type} default->{self.default!r}>"


class SettingsQueries:
    """Mixed into ``Settings``: derived settings and Celery's lookups."""

    if TYPE_CHECKING:  # the Settings' own

        def get(self, key: str, default: Any = None) -> Any: ...

        def table(self, with_defaults: bool = False, censored: bool = True) -> dict[str, Any]: ...

        def __getitem__(self, key: str) -> Any: ...

    # -- settings Celery derives from others ------------------------------------------------
    @property
    def broker_url(self) -> Any:
        return os.environ.get("CELERY_BROKER_URL") or self.get("broker_url") or self.get("broker_host")

    @property
    def broker_read_url(self) -> Any:
        return os.environ.get("CELERY_BROKER_READ_URL") or self.get("broker_read_url") or self.broker_url

    @property
    def broker_write_url(self) -> Any:
        return os.environ.get("CELERY_BROKER_WRITE_URL") or self.get("broker_write_url") or self.broker_url

    @property
    def result_backend(self) -> Any:
        return os.environ.get("CELERY_RESULT_BACKEND") or self.get("result_backend")

    @property
    def task_default_exchange(self) -> Any:
        return self.get("task_default_exchange") or self.get("task_default_queue")

    @property
    def task_default_routing_key(self) -> Any:
        return self.get("task_default_routing_key") or self.get("task_default_queue")

    # -- lookups ----------------------------------------------------------------------------
    def find_option(self, name: str, namespace: str = "") -> searchresult:
        """The setting ``name`` is the end of (``find_option('always_eager')`` is
        ``task_always_eager``), within ``namespace`` when given: ``(namespace, key, Option)``.
        KeyError when no setting matches."""
        wanted = name.lower()
        if namespace:
            candidates = [f"{namespace.lower()}_{wanted}"]
        else:
            candidates = [wanted, *sorted(k for k in DEFAULTS if k.endswith(f"_{wanted}"))]
        for full in candidates:
            if full in DEFAULTS:
                prefix, _, rest = full.partition("_")
                if prefix in NAMESPACES and rest:
                    return searchresult(prefix, rest, Option(DEFAULTS[full]))
                return searchresult(None, full, Option(DEFAULTS[full]))
        raise KeyError(name)

    def get_by_parts(self, *parts: str) -> Any:
        """The setting named by ``parts`` joined with ``_`` (``get_by_parts('task',
        'default', 'queue')``)."""
        return self["_".join(part for part in parts if part)]

    def value_set_for(self, key: str) -> bool:
        """Whether ``key`` was given (on the conf or by a configuration source)."""
        return key in self.without_defaults()

    def without_defaults(self) -> dict[str, Any]:
        """The settings given (on the conf and by the configuration sources)."""
        return self.table(with_defaults=False, censored=False)

    @property
    def defaults(self) -> list[dict[str, Any]]:
        """The default layers: ``add_defaults`` values, then Celery's."""
        added: dict[str, Any] = object.__getattribute__(self, "_added_defaults")
        return [added, dict(DEFAULTS)]

    @property
    def maps(self) -> list[dict[str, Any]]:
        """Every layer, first found first: the given settings, then the defaults."""
        return [self.without_defaults(), *self.defaults]

    def iterkeys(self) -> Iterator[str]:
        return iter(self.table(with_defaults=True, censored=False))

    def itervalues(self) -> Iterator[Any]:
        return iter(self.table(with_defaults=True, censored=False).values())

    def iteritems(self) -> Iterator[tuple[str, Any]]:
        return iter(self.table(with_defaults=True, censored=False).items())
