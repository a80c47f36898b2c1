"""billiard (Celery's fork of multiprocessing) as far as Celery integrations import it.

The import rule (bridge/install.py) serves these modules only where the real billiard is not
installed: sentry-sdk's Celery integration wraps ``billiard.pool.Worker.workloop`` to flush its
events when a pool child exits, and opentelemetry's reads ``billiard.einfo``. pgtasks' prefork
pool has no billiard worker loop: an error tracker flushes at interpreter exit instead.
"""

from __future__ import annotations

VERSION = (4, 2, 1, 0)
__version__ = "4.2.1.0"
