"""Celery's canvas stamping (Canvas: "Stamping"): ``Signature.stamp`` / ``stamp_links`` and the
:class:`StampingVisitor` that a workflow walks. A stamp is an option of the signature (its
name listed in the ``stamped_headers`` option); sending the task moves the stamps into its
message headers (``stamps``, ``stamped_headers``: bridge/publishing.py), so the worker's
``self.request`` has them, and ``revoke_by_stamped_headers`` matches them.

How stamps merge (as Celery documents): the stamps given win over the ones a signature has
unless ``append_stamps=True``, which keeps both values of a stamp as a list; links are stamped
with the headers and the visitor only, never with the stamps of the signature they follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgtasks.compat.celery.utils.functional import maybe_list

if TYPE_CHECKING:
    from pgtasks.compat.celery.canvas.signature import Signature

__all__ = ["StampingVisitor", "merge_stamps", "stamp_headers", "stamps_of"]


class StampingVisitor:
    """What to stamp on each part of a canvas: each ``on_*`` method returns the stamps (a dict)
    for that part; ``on_signature`` must be defined, the others add nothing by default."""

    def on_group_start(self, group: Any, **headers: Any) -> dict[str, Any]:
        return {}

    def on_group_end(self, group: Any, **headers: Any) -> None:
        pass

    def on_chain_start(self, chain: Any, **headers: Any) -> dict[str, Any]:
        return {}

    def on_chain_end(self, chain: Any, **headers: Any) -> None:
        pass

    def on_signature(self, sig: Any, **headers: Any) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} must define on_signature(sig, **headers)")

    def on_chord_header_start(self, sig: Any, **header: Any) -> dict[str, Any]:
        """A chord's header is visited as a group."""
        return self.on_group_start(sig.header, **header)

    def on_chord_header_end(self, sig: Any, **header: Any) -> None:
        self.on_group_end(sig.header, **header)

    def on_chord_body(self, sig: Any, **header: Any) -> dict[str, Any]:
        return {}

    def on_callback(self, callback: Any, **header: Any) -> dict[str, Any]:
        return {}

    def on_errback(self, errback: Any, **header: Any) -> dict[str, Any]:
        return {}


def merge_stamps(into: dict[str, Any], other: dict[str, Any], append: bool) -> None:
    """Merge ``other`` into ``into``: a stamp only in ``other`` is added; one in both keeps
    ``into``'s value, or with ``append`` both values as one list (nested dicts merge)."""
    for key, value in list(into.items()):
        if key not in other:
            continue
        theirs = other[key]
        if isinstance(value, dict) and isinstance(theirs, dict):
            merge_stamps(value, theirs, append)
        elif append:
            mine = value if isinstance(value, list) else ([] if value is None else [value])
            into[key] = [*mine, *(theirs if isinstance(theirs, list) else [theirs])]
    for key, value in other.items():
        into.setdefault(key, value)


def stamp_headers(
    sig: Signature,
    visitor_headers: dict[str, Any] | None,
    append: bool,
    headers: dict[str, Any],
    own: bool = True,
) -> dict[str, Any]:
    """The stamps to set on ``sig``: ``headers`` (every key a stamp unless they list their
    ``stamped_headers``), then the visitor's, then (``own``) the stamps ``sig`` already has."""
    merged = dict(headers)
    merged.setdefault("stamped_headers", [k for k in headers if k != "stamped_headers"])
    if visitor_headers is not None:
        visited = dict(visitor_headers)
        visited.setdefault("stamped_headers", list(visited))
        names = {*merged["stamped_headers"], *visited.pop("stamped_headers")}
        merge_stamps(merged, visited, append)
        merged["stamped_headers"] = sorted(names)
    if own:
        existing = list(sig.options.get("stamped_headers") or [])
        names = {*merged["stamped_headers"], *existing}
        merge_stamps(merged, {k: v for k, v in sig.options.items() if k in existing}, append)
        merged["stamped_headers"] = sorted(names)
    return merged


def stamps_of(options: dict[str, Any]) -> dict[str, Any]:
    """The stamps among a signature's options (taken out of ``options``): each name in its
    ``stamped_headers`` with its value."""
    names = maybe_list(options.pop("stamped_headers", None)) or []
    return {name: options.pop(name, None) for name in names if isinstance(name, str)}
