"""The refused list: Celery and kombu modules pgtasks has no counterpart for (the worker's
internals, events, Celery's own command line, message signing, other result backends, kombu's
transports). The import rule (install.py) serves one of these names when no module of
``compat/`` has it: the module imports, so an application or library that merely imports it
still loads; every name taken from it is a class whose construction (or call) raises
NotImplementedError saying why and what to use instead. Subclassing works (a custom bootstep
class can be defined; pgtasks never runs it). ``pgtasks celery-check`` lists each one an
application imported."""

from __future__ import annotations

import sys
import types
from typing import Any, NoReturn

EVENTS = (
    "Celery events are not emitted by pgtasks: read task states from the database (the dashboard, "
    "its Flower API, /metrics) or connect to the task signals"
)
WORKER = (
    "pgtasks' worker has no bootsteps or consumer: use the worker signals (worker_ready, "
    "worker_shutdown, ...), its health endpoint, the management API, and for a command of your "
    "own celery.worker.control's @control_command"
)
POOLS = "pools are pgtasks' own: `pgtasks worker -P prefork|threads|solo|asyncio`"
COMMANDS = "Celery's command line is replaced by `pgtasks` (the celery command runs it): see `pgtasks --help`"
BACKENDS = "results live in the pgtasks database (result_backend is ignored): use app.backend"
TRANSPORTS = "pgtasks has no broker: tasks go to the database (broker_url names it)"

# Module name -> why it is refused. Packages (with children below) get a __path__.
REFUSED: dict[str, str] = {
    **dict.fromkeys(
        (
            "celery.events",
            "celery.events.state",
            "celery.events.receiver",
            "celery.events.dispatcher",
            "celery.events.event",
            "celery.events.snapshot",
            "celery.events.cursesmon",
            "celery.events.dumper",
            "celery.app.events",
        ),
        EVENTS,
    ),
    **dict.fromkeys(
        (
            "celery.bootsteps",
            "celery.worker.consumer",
            "celery.worker.consumer.consumer",
            "celery.worker.consumer.connection",
            "celery.worker.consumer.control",
            "celery.worker.consumer.events",
            "celery.worker.consumer.gossip",
            "celery.worker.consumer.heart",
            "celery.worker.consumer.mingle",
            "celery.worker.consumer.tasks",
            "celery.worker.consumer.agent",
            "celery.worker.consumer.delayed_delivery",
            "celery.worker.strategy",
            "celery.worker.autoscale",
            "celery.worker.components",
            "celery.worker.heartbeat",
            "celery.worker.loops",
            "celery.worker.pidbox",
            "celery.apps",
            "celery.apps.worker",
            "celery.apps.beat",
            "celery.apps.multi",
        ),
        WORKER,
    ),
    **dict.fromkeys(
        (
            "celery.concurrency",
            "celery.concurrency.base",
            "celery.concurrency.prefork",
            "celery.concurrency.solo",
            "celery.concurrency.thread",
            "celery.concurrency.eventlet",
            "celery.concurrency.gevent",
            "celery.concurrency.asynpool",
        ),
        POOLS,
    ),
    **dict.fromkeys(
        (
            "celery.bin",
            "celery.bin.base",
            "celery.bin.celery",
            "celery.bin.worker",
            "celery.bin.beat",
            "celery.bin.events",
            "celery.bin.control",
            "celery.bin.multi",
            "celery.bin.shell",
            "celery.bin.call",
            "celery.bin.result",
            "celery.bin.migrate",
            "celery.bin.purge",
            "celery.bin.upgrade",
            "celery.bin.graph",
            "celery.bin.list",
            "celery.bin.logtool",
            "celery.bin.amqp",
        ),
        COMMANDS,
    ),
    **dict.fromkeys(
        (
            "celery.backends.redis",
            "celery.backends.database",
            "celery.backends.rpc",
            "celery.backends.cache",
            "celery.backends.mongodb",
            "celery.backends.filesystem",
            "celery.backends.s3",
            "celery.backends.dynamodb",
            "celery.backends.elasticsearch",
            "celery.backends.asynchronous",
            "celery.app.backends",
        ),
        BACKENDS,
    ),
    **dict.fromkeys(
        (
            "kombu.pools",
            "kombu.simple",
            "kombu.mixins",
            "kombu.pidbox",
            "kombu.common",
            "kombu.transport",
            "kombu.transport.redis",
            "kombu.transport.pyamqp",
            "kombu.transport.SQS",
            "kombu.transport.memory",
            "kombu.transport.virtual",
        ),
        TRANSPORTS,
    ),
    **dict.fromkeys(
        (
            "celery.backends.arangodb",
            "celery.backends.azureblockblob",
            "celery.backends.cassandra",
            "celery.backends.consul",
            "celery.backends.cosmosdbsql",
            "celery.backends.couchbase",
            "celery.backends.couchdb",
            "celery.backends.gcs",
        ),
        BACKENDS,
    ),
    **dict.fromkeys(
        (
            "kombu.asynchronous",
            "kombu.asynchronous.aws",
            "kombu.asynchronous.debug",
            "kombu.asynchronous.http",
            "kombu.asynchronous.http.base",
            "kombu.asynchronous.http.curl",
            "kombu.asynchronous.hub",
            "kombu.asynchronous.semaphore",
            "kombu.asynchronous.timer",
            "kombu.abstract",
            "kombu.compat",
            "kombu.compression",
            "kombu.log",
            "kombu.matcher",
            "kombu.message",
            "kombu.resource",
            "kombu.transport.base",
            "kombu.transport.virtual.base",
            "kombu.transport.virtual.exchange",
            "kombu.transport.SLMQ",
            "kombu.transport.azureservicebus",
            "kombu.transport.azurestoragequeues",
            "kombu.transport.confluentkafka",
            "kombu.transport.consul",
            "kombu.transport.etcd",
            "kombu.transport.filesystem",
            "kombu.transport.gcpubsub",
            "kombu.transport.librabbitmq",
            "kombu.transport.mongodb",
            "kombu.transport.native_delayed_delivery",
            "kombu.transport.pgmq",
            "kombu.transport.pyro",
            "kombu.transport.qpid",
            "kombu.transport.sqlalchemy",
            "kombu.transport.zookeeper",
            "kombu.utils.amq_manager",
            "kombu.utils.collections",
            "kombu.utils.compat",
            "kombu.utils.debug",
            "kombu.utils.div",
            "kombu.utils.eventio",
            "kombu.utils.functional",
            "kombu.utils.limits",
            "kombu.utils.scheduling",
            "kombu.utils.text",
            "kombu.utils.time",
            "kombu.utils.url",
        ),
        TRANSPORTS,
    ),
    **dict.fromkeys(
        (
            "celery.utils.abstract",
            "celery.utils.annotations",
            "celery.utils.deprecated",
            "celery.utils.quorum_queues",
            "celery.utils.static",
            "celery.utils.sysinfo",
            "celery.utils.term",
            "celery.utils.threads",
            "celery.utils.timer2",
        ),
        "an internal helper of Celery's worker, which pgtasks does not have",
    ),
    "celery.fixups": "Django is set up by pgtasks itself (django.setup(), connections around tasks)",
    "celery.fixups.django": "Django is set up by pgtasks itself (django.setup(), connections around tasks)",
    "celery.security": (
        "message signing is not supported by pgtasks: the database is the only channel (tasks are "
        "rows, not broker messages); remove setup_security() and task_serializer 'auth', and limit "
        "who may write the pgtasks schema with PostgreSQL roles"
    ),
    "celery.contrib.migrate": "to move tasks from a Celery broker use `pgtasks import-celery`",
    "celery.contrib.sphinx": "the Sphinx extension is not provided: document tasks as functions",
    "celery.platforms": "process management belongs to `pgtasks worker` (signals, pid files are not managed)",
    "celery.utils.debug": "memory sampling is not provided: use the worker's /metrics",
}
MARK = "__pgtasks_refused__"


def _refuse(module: str, name: str, why: str) -> NoReturn:
    raise NotImplementedError(f"{module}.{name} is not supported by pgtasks: {why}")


class _Refusing(type):
    """The metaclass of placeholders: an attribute the class does not have (``Panel.register``)
    is a function raising NotImplementedError, so the error says why, not AttributeError."""

    def __getattr__(cls, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        why = next((c.__dict__["_why"] for c in cls.__mro__ if "_why" in c.__dict__), "")
        module = cls.__module__

        def refuse(*args: Any, **kwargs: Any) -> NoReturn:
            _refuse(module, f"{cls.__name__}.{attr}", why)

        return refuse


def placeholder(module: str, name: str, why: str) -> type:
    """A class standing for ``module.name``: defining a subclass works, constructing or calling
    it (or any of its methods) raises NotImplementedError."""

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        _refuse(module, name, why)

    namespace = {"__init__": refuse, "__module__": module, "__doc__": f"Not supported: {why}", "_why": why}
    return _Refusing(name, (), namespace)


def refused_module(name: str) -> types.ModuleType:
    """The module served for ``name`` of :data:`REFUSED`."""
    why = REFUSED[name]
    module = types.ModuleType(name, f"Not supported by pgtasks: {why}")
    setattr(module, MARK, why)
    if any(other.startswith(name + ".") for other in REFUSED):
        module.__path__ = []  # a package: its children are refused modules too

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        made = placeholder(name, attr, why)
        setattr(module, attr, made)
        return made

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def imported_refused() -> dict[str, str]:
    """The refused modules imported in this process, with why each is refused."""
    found = {}
    for name, why in REFUSED.items():
        module = sys.modules.get(name)
        if module is not None and getattr(module, MARK, None) == why:
            found[name] = why
    return found
