"""kombu's ``kombu.utils.objects``: ``cached_property`` (the standard library's)."""

from __future__ import annotations

import functools

__all__ = ["cached_property"]

cached_property = functools.cached_property
