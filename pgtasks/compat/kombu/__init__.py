"""kombu, as Celery applications and their libraries import it: ``Queue``, ``Exchange`` and
``binding`` (``kombu.entity``), ``Connection`` to the pgtasks database (``kombu.connection``),
``Producer`` and ``Consumer`` (``kombu.messaging``), ``uuid``, ``kombu.serialization``, kombu's
exceptions and utilities. The import rule (bridge/install.py) serves ``kombu.X.Y`` from
``compat/kombu/X/Y.py``; this package only re-exports."""

from __future__ import annotations

from pgtasks.compat.kombu import serialization
from pgtasks.compat.kombu.connection import BrokerConnection, Connection
from pgtasks.compat.kombu.entity import Exchange, Queue, binding
from pgtasks.compat.kombu.messaging import Consumer, Producer
from pgtasks.compat.kombu.serialization import register
from pgtasks.compat.kombu.utils.uuid import uuid

__all__ = [
    "BrokerConnection",
    "Connection",
    "Consumer",
    "Exchange",
    "Producer",
    "Queue",
    "binding",
    "register",
    "serialization",
    "uuid",
]
