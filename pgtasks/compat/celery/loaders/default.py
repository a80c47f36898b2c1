"""Celery's ``celery.loaders.default``: :class:`Loader`, which reads its configuration from the
module ``CELERY_CONFIG_MODULE`` names (``celeryconfig`` by default), an empty one when that
module cannot be imported."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pgtasks.compat.celery.loaders.base import BaseLoader, ModuleSettings

__all__ = ["DEFAULT_CONFIG_MODULE", "Loader"]

DEFAULT_CONFIG_MODULE = "celeryconfig"


class Loader(BaseLoader):
    """The loader of Celery's default app (``loader="default"``)."""

    def setup_settings(self, settingsdict: Any) -> ModuleSettings:
        """The settings of a module or mapping, read by attribute or by key."""
        return ModuleSettings(settingsdict)

    def read_configuration(self, env: str = "CELERY_CONFIG_MODULE", fail_silently: bool = True) -> Any:
        """The settings of the module the environment names (``celeryconfig`` without it);
        empty when it cannot be imported, unless ``fail_silently`` is false."""
        name = os.environ.get(env) or DEFAULT_CONFIG_MODULE
        try:
            module = self.import_config_module(name)
        except ImportError:
            if not fail_silently:
                raise
            empty: Mapping[str, Any] = {}
            return self.setup_settings(empty)
        self.configured = True
        return self.setup_settings(module)
