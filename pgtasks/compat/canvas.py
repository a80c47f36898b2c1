"""``celery.canvas``: task signatures and the workflows built from them, as one module (the
import hook gives it to ``import celery.canvas``). Each part lives in its own module, bottom
up: signatures.py (``Signature``, ``signature``, ``maybe_signature``), workflows.py
(``chain``, ``group``, ``chord``), mapping.py (``xmap``, ``xstarmap``, ``chunks``); planning.py
turns any of them into linked tasks.
"""

from __future__ import annotations

from pgtasks.compat.mapping import chunks, xmap, xstarmap
from pgtasks.compat.signatures import Signature, maybe_signature, signature, subtask, takes_request
from pgtasks.compat.workflows import chain, chord, group

__all__ = [
    "Signature",
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
