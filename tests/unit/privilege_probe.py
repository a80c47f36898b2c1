"""A module ``pgtasks worker -I`` imports in tests/unit/test_privileges.py: it says which user
imports it, then ends the worker (the test needs nothing else of it)."""

from __future__ import annotations

import os
import sys

print(f"imported by uid {os.geteuid()}", file=sys.stderr, flush=True)
raise SystemExit(3)
