"""Celery's ``celery.canvas``: task signatures and the workflows built from them. Each class
lives in a module of its own: signature.py (``Signature``, ``signature``, ``maybe_signature``),
chain.py, group.py, chord.py, mapping.py (``xmap``, ``xstarmap``, ``chunks``) and stamping.py
(``StampingVisitor``), over the base they share (workflow.py); this package only re-exports
them. bridge/planning.py turns any of them into linked tasks.
"""

from __future__ import annotations

from pgtasks.compat.celery.canvas.chain import chain
from pgtasks.compat.celery.canvas.chord import chord
from pgtasks.compat.celery.canvas.group import group
from pgtasks.compat.celery.canvas.mapping import chunks, xmap, xstarmap
from pgtasks.compat.celery.canvas.signature import (
    Signature,
    maybe_signature,
    signature,
    subtask,
    takes_request,
)
from pgtasks.compat.celery.canvas.stamping import StampingVisitor

# Celery's names for the classes of chain and chord instances: projects check
# isinstance(flow, _chain) and patch _chain.apply_async in their tests.
_chain = chain
_chord = chord

__all__ = [
    "Signature",
    "StampingVisitor",
    "chain",
    "chord",
    "chunks",
    "group",
    "maybe_signature",
    "signature",
    "subtask",
    "takes_request",
    "xmap",
    "xstarmap",
]
