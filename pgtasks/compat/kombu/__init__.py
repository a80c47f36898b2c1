"""kombu, as Celery applications and their libraries import it: ``Queue`` and ``Exchange``
(``kombu.entity``), ``Connection`` to the pgtasks database (``kombu.connection``),
``Producer`` (``kombu.messaging``), ``kombu.serialization``, kombu's exceptions and
utilities. The import rule (bridge/install.py) serves ``kombu.X.Y`` from
``compat/kombu/X/Y.py``; this package only re-exports."""

from __future__ import annotations

from pgtasks.compat.kombu import serialization
from pgtasks.compat.kombu.connection import BrokerConnection, Connection
from pgtasks.compat.kombu.entity import Exchange, Queue
from pgtasks.compat.kombu.messaging import Producer
from pgtasks.compat.kombu.serialization import register

__all__ = ["BrokerConnection", "Connection", "Exchange", "Producer", "Queue", "register", "serialization"]
