"""Celery's ``celery.app.utils``: :class:`Settings` (``app.conf``), with Celery's old and new
setting names, and ``appstr`` / ``bugreport``.

Reading goes by the current (lowercase) name; an old (uppercase) name reads the same value.
Loading from an object or module follows Celery: with ``namespace='CELERY'`` only names
starting with ``CELERY_`` are settings, by their current names (``CELERY_BROKER_URL`` ->
``broker_url``, ``CELERY_TASK_ALWAYS_EAGER`` -> ``task_always_eager``); an old name there is
not read, as in Celery (``CELERY_ALWAYS_EAGER`` is no setting: a warning names the setting
once it is looked up); without a namespace old and new names may not be mixed
(ImproperlyConfigured names the ones to rename).
"""

from __future__ import annotations

import copy
import importlib.metadata
import logging
import platform
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pgtasks.compat.bridge.celery_version import VERSION_BANNER
from pgtasks.compat.celery.app.defaults import DEFAULTS, NEW_TO_OLD, OLD_TO_NEW
from pgtasks.compat.celery.app.settings_queries import SettingsQueries
from pgtasks.compat.celery.exceptions import ImproperlyConfigured
from pgtasks.compat.kombu.utils.imports import symbol_by_name
from pgtasks.sysdb.urls import redact_url

log = logging.getLogger("pgtasks.celery")

__all__ = [
    "Settings",
    "appstr",
    "bugreport",
    "current_name",
    "filter_hidden_settings",
    "settings_from_mapping",
]

HIDDEN_SETTINGS = re.compile(r"API|TOKEN|KEY|SECRET|PASS|PROFANITIES_LIST|SIGNATURE|DATABASE", re.IGNORECASE)
MASK = "********"


def filter_hidden_settings(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` safe to show (``inspect conf``, a bug report): the value of a name that looks
    secret (KEY, SECRET, PASS, TOKEN, ...) masked, the password of a URL hidden, nested
    mappings (Django's ``DATABASES``) filtered the same way."""

    def shown(key: Any, value: Any) -> Any:
        if isinstance(value, Mapping):
            return filter_hidden_settings(value)
        if isinstance(key, str) and HIDDEN_SETTINGS.search(key):
            return MASK
        if isinstance(value, str) and "://" in value:
            return redact_url(value)
        return value

    return {key: shown(key, value) for key, value in conf.items()}


def current_name(key: str) -> str:
    """The current name of a setting given by its old or current name (unknown names as given)."""
    return OLD_TO_NEW.get(key, key)


def _namespaced(key: str, prefix: str) -> str | None:
    """The setting a key stands for under ``namespace`` (None: not a setting of that namespace)."""
    if not key.startswith(prefix):
        return None
    return key[len(prefix) :].lower()


def settings_from_mapping(values: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """The settings found in ``values`` (an object's or a module's attributes), by current name.

    Names that are not settings (Django's own, helpers) are kept as given so that
    ``app.conf.get(name)`` still finds them, as in Celery.
    """
    found: dict[str, Any] = {}
    if namespace:
        prefix = namespace.rstrip("_") + "_"
        for key, value in values.items():
            name = _namespaced(key, prefix)
            found[name if name is not None else key] = value
        return found
    old = sorted(k for k in values if k in OLD_TO_NEW)
    new = sorted(k for k in values if k in DEFAULTS and k not in OLD_TO_NEW)
    if old and new:
        renames = "\n".join(f"{k:<36} -> {OLD_TO_NEW[k]}" for k in old)
        raise ImproperlyConfigured(
            "Cannot mix new and old setting keys, please rename the following settings to the "
            f"new format:\n\n{renames}"
        )
    for key, value in values.items():
        found[current_name(key)] = value
    return found


def attributes_of(obj: Any) -> dict[str, Any]:
    """The public attributes of a module, class or object (or the items of a mapping)."""
    if isinstance(obj, Mapping):
        return dict(obj)
    return {k: getattr(obj, k) for k in dir(obj) if not k.startswith("_")}


MISSING = object()
# What a new source may change: everything the app derives from its settings.
SOURCE_CHANGES = frozenset(
    {
        "broker_url",
        "task_default_queue",
        "task_serializer",
        "accept_content",
        "result_expires",
        "timezone",
        "task_routes",
    }
)


class _Source:
    """One ``config_from_object`` source, read at lookup time."""

    def __init__(self, obj: Any, namespace: str | None) -> None:
        self._obj = obj
        self._resolved = not isinstance(obj, str)
        self.prefix = namespace.rstrip("_") + "_" if namespace else None
        self._unread: set[str] = set()  # old names found here and said to be unread

    @property
    def obj(self) -> Any:
        if not self._resolved:  # an import path: imported on first use, as Celery does
            self._obj = symbol_by_name(self._obj)
            self._resolved = True
        return self._obj

    def _names(self, name: str) -> list[str]:
        """The attribute names that may hold setting ``name`` in this source."""
        old = NEW_TO_OLD.get(name)
        if self.prefix is None:
            return [name] if old is None else [name, old]
        return [self.prefix + name.upper(), name]  # as Celery: a setting by its own name counts too

    def lookup(self, name: str) -> Any:
        return self.find(name)[1]

    def find(self, name: str) -> tuple[str | None, Any]:
        """The attribute holding setting ``name`` here and its value (None, MISSING: none)."""
        obj = self.obj
        for attribute in self._names(name):
            if isinstance(obj, Mapping):
                if attribute in obj:
                    return attribute, obj[attribute]
            else:
                value = getattr(obj, attribute, MISSING)
                if value is not MISSING:
                    return attribute, value
        self._warn_of_old_name(obj, name)
        return None, MISSING

    def _warn_of_old_name(self, obj: Any, name: str) -> None:
        """Say, once, that the old name of ``name`` is set here but not read: Celery reads only
        current names under a namespace (its ``CELERY_ALWAYS_EAGER`` is dead, not eager)."""
        old = NEW_TO_OLD.get(name)
        if self.prefix is None or old is None or old in self._unread or not old.startswith(self.prefix):
            return
        if (old in obj) if isinstance(obj, Mapping) else hasattr(obj, old):
            self._unread.add(old)
            log.warning(
                "%s is not read with namespace=%r, as in Celery: name the setting %s",
                old,
                self.prefix.rstrip("_"),
                self.prefix + name.upper(),
            )

    def settings(self) -> dict[str, Any]:
        """Every setting this source holds now, by current name."""
        return settings_from_mapping(attributes_of(self.obj), self.prefix)


class Settings(SettingsQueries, dict):  # type: ignore[type-arg]
    """``app.conf``: settings by current name; attribute access, old names and change
    notification.

    ``on_change(names)`` is called after every change with the current names changed.
    """

    def __init__(self, on_change: Callable[[set[str]], None] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_on_change", on_change)
        # config_from_object sources, newest last: read at each lookup, as Celery reads them
        # (a Django setting changed by a test is seen at once; Django is not read before).
        object.__setattr__(self, "_sources", [])
        object.__setattr__(self, "_added_defaults", {})
        # This app's own copies of Celery's mutable defaults, below every source (a source
        # added after one was read still wins over it).
        object.__setattr__(self, "_default_copies", {})

    # -- sources ---------------------------------------------------------------------------
    def add_source(self, obj: Any, namespace: str | None = None) -> None:
        """Read settings from ``obj`` (an object, module, mapping or import path, resolved on
        first use) whenever they are looked up, below the ones set on the conf itself."""
        self._sources.append(_Source(obj, namespace))
        self._notify(set(SOURCE_CHANGES))

    def remove_first_source(self) -> None:
        """Forget the first source added (CELERY_CONFIG_MODULE's, once another replaces it)."""
        if self._sources:
            self._sources.pop(0)
            self._notify(set(SOURCE_CHANGES))

    def _name(self, key: str) -> str:
        """The current name of ``key``; with a namespaced source, a key written with its
        prefix (``CELERY_TASK_ALWAYS_EAGER``) is that setting too, as in Celery."""
        name = current_name(key)
        if name != key or not key.isupper():
            return name
        for source in self._sources:
            if source.prefix and key.startswith(source.prefix):
                unprefixed = key[len(source.prefix) :].lower()
                if unprefixed in DEFAULTS:
                    return unprefixed
        return name

    def add_defaults(self, values: Mapping[str, Any]) -> None:
        """Defaults below every other layer (Celery's ``app.add_defaults``)."""
        self._added_defaults.update({current_name(k): v for k, v in values.items()})
        self._notify({current_name(k) for k in values})

    def _layered(self, name: str) -> Any:
        """The value of ``name`` from the sources or the added defaults, else MISSING."""
        for source in reversed(self._sources):
            value = source.lookup(name)
            if value is not MISSING:
                return value
        return self._added_defaults.get(name, MISSING)

    def known(self, key: str) -> bool:
        """Whether ``key`` is a setting here: set, found in a source, or one of Celery's."""
        name = self._name(key)
        return dict.__contains__(self, name) or name in DEFAULTS or self._layered(name) is not MISSING

    # -- reading -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        name = self._name(key)
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        layered = self._layered(name)
        if layered is not MISSING:
            return layered
        if name in DEFAULTS:
            value = DEFAULTS[name]
            if isinstance(value, (dict, list)):  # a mutable default is this app's own, as in Celery
                copies: dict[str, Any] = self._default_copies
                value = copies.setdefault(name, copy.deepcopy(value))
            return value
        raise KeyError(key)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"no setting {key!r}") from None

    def __contains__(self, key: object) -> bool:
        # As Celery's: every setting is in the conf, with its default (None for most).
        return isinstance(key, str) and self.known(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def find_value_for_key(self, name: str, namespace: str = "celery") -> Any:
        """The setting ``<namespace>_<name>`` (``find_value_for_key("extended", "result")`` is
        ``result_extended``); KeyError when there is no such setting."""
        return self[f"{namespace}_{name}".lower() if namespace else name]

    def first(self, *keys: str) -> Any:
        """The first of ``keys`` that has a value."""
        for key in keys:
            value = self.get(key)
            if value is not None:
                return value
        return None

    def changes(self) -> dict[str, Any]:
        """The settings given explicitly (by current name)."""
        return dict(self.items())

    def humanize(self, with_defaults: bool = False, censored: bool = True) -> str:
        """The settings as ``name: value`` lines, secrets masked unless ``censored`` is False."""
        shown = self.table(with_defaults, censored)
        return "\n".join(f"{k}: {v!r}" for k, v in sorted(shown.items()))

    def table(self, with_defaults: bool = False, censored: bool = True) -> dict[str, Any]:
        """Every setting with its value: explicit ones and those of the sources (and the
        defaults with ``with_defaults``); as Celery's, secrets masked
        (:func:`filter_hidden_settings`) unless ``censored`` is False."""
        layered: dict[str, Any] = dict(self._added_defaults) if with_defaults else {}
        for source in self._sources:
            layered.update(source.settings())
        table = {**(DEFAULTS if with_defaults else {}), **layered, **self}
        return filter_hidden_settings(table) if censored else table

    def origin(self, name: str) -> str:
        """Where setting ``name`` is read from, as the project wrote it: ``name`` when set on
        the conf, else the source's own name (Django's ``CELERY_RESULT_BACKEND``)."""
        if dict.__contains__(self, name):
            return name
        for source in reversed(self._sources):
            found: tuple[str | None, Any] = source.find(name)
            if found[1] is not MISSING and found[0] is not None:
                return found[0]
        return name

    def old_name(self, key: str) -> str | None:
        """The old (uppercase) name of a current setting, if it had one."""
        return NEW_TO_OLD.get(key)

    # -- writing -------------------------------------------------------------------------
    def __setitem__(self, key: str, value: Any) -> None:
        name = self._name(key)
        dict.__setitem__(self, name, value)
        self._notify({name})

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delitem__(self, key: str) -> None:
        name = self._name(key)
        dict.__delitem__(self, name)
        self._notify({name})

    def update(self, other: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), **kwargs: Any) -> None:  # type: ignore[override]
        values = dict(other, **kwargs)
        names = {self._name(k) for k in values}
        for key, value in values.items():
            dict.__setitem__(self, self._name(key), value)
        self._notify(names)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if self.get(key) is None:
            self[key] = default
        return self[key]

    def load(self, values: Mapping[str, Any], namespace: str | None = None) -> None:
        """Set everything ``settings_from_mapping`` finds in ``values``."""
        found = settings_from_mapping(values, namespace)
        for key, value in found.items():
            dict.__setitem__(self, key, value)
        self._notify(set(found))

    def _notify(self, names: set[str]) -> None:
        callback = object.__getattribute__(self, "_on_change")
        if callback is not None:
            callback(names)


def appstr(app: Any) -> str:
    """``name at 0x...`` of an app, as Celery's banner shows it."""
    return f"{app.main or '__main__'} at {id(app):#x}"


def bugreport(app: Any) -> str:
    """The versions and settings to paste into a bug report, in the layout of Celery's
    (``celery report``, ``inspect report``): software, platform, loader, where tasks and
    results are kept, then the app's settings with secrets masked."""
    scheme = app.engine.database_target.dialect  # postgres or sqlite; connects nothing
    loader = type(app.loader)
    where = loader.__module__.removeprefix("pgtasks.compat.")  # celery.loaders.app, as imported
    return "\n".join(
        [
            f"software -> celery:{VERSION_BANNER} pgtasks:{_version('pgtasks')} "
            f"psycopg:{_version('psycopg')} py:{platform.python_version()}",
            f"platform -> system:{platform.system()} arch:{platform.architecture()[0]}",
            f"            kernel version:{platform.release()} imp:{platform.python_implementation()}",
            f"loader   -> {where}.{loader.__qualname__}",
            f"settings -> transport:{scheme} results:{scheme} (the pgtasks database)",
            "",
            app.conf.humanize(),
        ]
    )


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
