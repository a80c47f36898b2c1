"""kombu's ``kombu.utils.encoding``: text and bytes conversions that never raise."""

from __future__ import annotations

from typing import Any

__all__ = ["bytes_to_str", "safe_repr", "safe_str", "str_to_bytes"]


def str_to_bytes(s: Any) -> Any:
    return s.encode() if isinstance(s, str) else s


def bytes_to_str(s: Any) -> Any:
    return s.decode(errors="replace") if isinstance(s, bytes) else s


def safe_str(s: Any, errors: str = "replace") -> str:
    """``s`` as text, never raising."""
    if isinstance(s, bytes):
        return s.decode("utf-8", errors)
    try:
        return str(s)
    except Exception as exc:
        return f"<Unrepresentable {type(s)!r}: {exc!r}>"


def safe_repr(o: Any, errors: str = "replace") -> str:
    """``repr(o)``, never raising."""
    try:
        return repr(o)
    except Exception:
        return safe_str(o, errors)
