"""``pgtasks flower`` and ``celery -A proj flower``: the dashboard started with Flower's command
line as Procfiles and compose files write it. Flower's options are read as Flower reads them:
``--name=value`` (the ``=`` required but for flags; dashes and underscores alike), then
``FLOWER_<NAME>`` environment variables, then ``flowerconfig.py`` (or ``--conf=path``), the
command line winning over the file and the file over the environment. Options that mean
something to pgtasks are used; the others are accepted and named in one warning each.
``FLOWER_UNAUTHENTICATED_API`` opens the API without credentials, as in Flower 2.2."""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import os
import runpy
from collections.abc import Callable
from typing import Any

from pgtasks.cli.dashboard import run_dashboard
from pgtasks.cli.database import SCHEMA_HELP
from pgtasks.cli.options import add_command, comma_list, port
from pgtasks.engine.errors import ConfigurationError

log = logging.getLogger("pgtasks.dashboard")

BOOL_WORDS = {"y": True, "yes": True, "t": True, "true": True, "on": True, "1": True,
              "n": False, "no": False, "f": False, "false": False, "off": False, "0": False}  # fmt: skip


def _bool(text: str) -> bool:
    try:
        return BOOL_WORDS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"invalid truth value {text!r}") from None


def _buckets(value: str | list[float]) -> list[float]:
    """``task_runtime_metric_buckets``: increasing finite numbers (comma-separated text, or a
    list in flowerconfig.py). A last ``inf`` names the +Inf bucket every histogram ends with,
    which /metrics writes anyway: it is dropped, not written twice."""
    bounds = [float(item) for item in (comma_list(value) if isinstance(value, str) else value)]
    if bounds and bounds[-1] == math.inf:
        bounds.pop()
    if not bounds:
        raise ValueError("give at least one finite bucket bound (the +Inf bucket is always there)")
    for bound in bounds:
        if not math.isfinite(bound):
            raise ValueError(f"bucket bounds must be finite numbers (only the last may be inf), not {bound}")
    for low, high in itertools.pairwise(bounds):
        if low >= high:
            raise ValueError(f"bucket bounds must increase, but {high:g} follows {low:g}")
    return bounds


def _port(value: Any) -> int:
    """A TCP port, from the command line's text or a ``flowerconfig.py`` number."""
    try:
        return port(str(value))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None


# Flower's options pgtasks uses: name -> parser of its text value.
USED: dict[str, Callable[[str], Any]] = {
    "port": _port,
    "address": str,
    "basic_auth": comma_list,
    "url_prefix": str,
    "read_only": _bool,
    "max_tasks": int,
    "task_runtime_metric_buckets": _buckets,
    "allowed_hosts": comma_list,  # pgtasks' own: the host names a proxy forwards
    "conf": str,
    "debug": _bool,
}
# Flower's options without a meaning here, and why (named in a warning when given).
UNUSED: dict[str, str] = {
    "broker_api": "queue lengths are read from the database",
    "inspect_timeout": "workers answer from the database at once",
    "persistent": "every task is kept in the database already",
    "db": "every task is kept in the database already",
    "state_save_interval": "every task is kept in the database already",
    "max_workers": "workers are read from the database",
    "enable_events": "pgtasks needs no events",
    "purge_offline_workers": "stopped workers leave the database",
    "natural_time": "a page setting of Flower's UI",
    "tasks_columns": "a page setting of Flower's UI",
    "auto_refresh": "pages update live",
    "format_task": "a page setting of Flower's UI",
    "cookie_secret": "the forms' token is random per start",
    "xheaders": "run behind a proxy with --allowed-hosts",
    "certfile": "terminate TLS in a proxy",
    "keyfile": "terminate TLS in a proxy",
    "ca_certs": "terminate TLS in a proxy",
    "unix_socket": "the dashboard listens on TCP",
    "auth": "OAuth is not supported: use --basic_auth",
    "auth_provider": "OAuth is not supported: use --basic_auth",
    "oauth2_key": "OAuth is not supported: use --basic_auth",
    "oauth2_secret": "OAuth is not supported: use --basic_auth",
    "oauth2_redirect_uri": "OAuth is not supported: use --basic_auth",
}
# Ignored options whose values Flower still parses: a value that does not parse stops the start.
CHECKED: dict[str, Callable[[str], Any]] = {
    "inspect_timeout": float,
    "max_workers": int,
    "state_save_interval": int,
    "purge_offline_workers": int,
}
FLAGS = frozenset(
    {"read_only", "debug", "persistent", "xheaders", "natural_time", "auto_refresh", "enable_events"}
)


def parse_flower_options(argv: list[str], environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The options of ``flower ARGS``, with the environment and the configuration file."""
    environ = dict(os.environ if environ is None else environ)
    given: dict[str, str] = {}
    for arg in argv:
        if not arg.startswith("--"):
            raise ConfigurationError(f"flower takes --name=value options, not {arg!r}")
        name, eq, value = arg[2:].partition("=")
        name = name.replace("-", "_")
        if not eq:
            if name not in FLAGS:
                raise ConfigurationError(f"Option '{name}' requires a value (write --{name}=VALUE)")
            value = "true"
        given[name] = value
    options: dict[str, Any] = {}
    for key, value in environ.items():
        if key.startswith("FLOWER_") and key != "FLOWER_UNAUTHENTICATED_API":
            name = key[len("FLOWER_") :].lower()
            if name in USED or name in UNUSED:
                options[name] = _parsed(name, value, f"environment variable {key}")
    conf = given.get("conf") or options.get("conf")
    options.update(_config_file(conf, explicit=conf is not None))
    for name, value in given.items():
        options[name] = _parsed(name, value, f"--{name}")
    if bool(options.get("certfile")) != bool(options.get("keyfile")):
        raise ConfigurationError("Both 'certfile' and 'keyfile' are required to enable SSL (as Flower)")
    for name in sorted(set(options) & set(UNUSED)):
        log.warning("flower option %s accepted and ignored: %s", name, UNUSED[name])
    unknown = sorted(set(given) - set(USED) - set(UNUSED))
    for name in unknown:
        log.warning("flower option --%s is not one of Flower's: ignored", name)
        options.pop(name, None)
    return options


def _parsed(name: str, value: Any, where: str) -> Any:
    parse = USED.get(name) or CHECKED.get(name)
    if parse is None or not (isinstance(value, str) or parse in (_buckets, _port)):
        return value
    try:
        return parse(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _config_file(path: str | None, explicit: bool) -> dict[str, Any]:
    """The Flower options a ``flowerconfig.py`` sets (its top-level names)."""
    path = path or "flowerconfig.py"
    if not os.path.exists(path):
        if explicit:
            raise ConfigurationError(f"--conf: no such file {path!r}")
        return {}
    names = runpy.run_path(path)
    return {k: _parsed(k, v, path) for k, v in names.items() if k in USED or k in UNUSED}


FLOWER_OPTIONS = "flower_options"


def add_flower_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """Register ``flower`` under ``sub``: Celery's global options (``-A``) are the parser's,
    Flower's (``--port=5555``) what it leaves over (see :func:`pgtasks.cli.main.main`)."""
    flower = add_command(
        sub,
        "flower",
        flower_main,
        common,
        add_help=False,  # --help is Flower's: usage() below
        allow_abbrev=False,  # Flower's --conf=FILE is not Celery's --config
        help="the dashboard started with Flower's command line (--port=N --address=A --basic_auth=u:p "
        "--url_prefix=P ..., FLOWER_* variables, flowerconfig.py)",
    )
    flower.add_argument("--database-url", help="without -A: the database to show")
    flower.add_argument("--schema", default="pgtasks", help=SCHEMA_HELP)
    flower.set_defaults(**{FLOWER_OPTIONS: []})


def flower_main(args: argparse.Namespace) -> int:
    """Run the dashboard for ``flower [Flower's options]``; ``args`` holds Celery's global
    options (``-A proj``) and, under ``flower_options``, Flower's."""
    rest: list[str] = getattr(args, FLOWER_OPTIONS)
    if "--help" in rest or "-h" in rest:
        print(usage())
        return 0
    options = parse_flower_options(rest)
    logging.basicConfig(
        level=logging.DEBUG if options.get("debug") else logging.WARNING,
        format="[%(asctime)s: %(levelname)s] %(message)s",
    )
    credentials = options.get("basic_auth") or []
    address = options.get("address")
    if address is None:
        address = "" if credentials else "127.0.0.1"  # Flower listens everywhere; alone, only locally
    return run_dashboard(
        args,
        address=address,
        port=int(options.get("port", 5555)),
        basic_auth=credentials,
        read_only=bool(options.get("read_only", False)),
        url_prefix=str(options.get("url_prefix") or ""),
        allowed_hosts=options.get("allowed_hosts") or [],
        max_tasks=int(options.get("max_tasks", 100_000)),
        buckets=tuple(options["task_runtime_metric_buckets"])
        if options.get("task_runtime_metric_buckets")
        else None,
    )


def usage() -> str:
    """``pgtasks flower --help``."""
    used = ", ".join(f"--{name}" for name in USED)
    unused = ", ".join(f"--{name}" for name in UNUSED)
    return (
        "usage: pgtasks flower [--name=value ...]   (with an app: pgtasks -A APP flower ...)\n\n"
        "The dashboard, started with Flower's options (also FLOWER_<NAME> variables and\n"
        "flowerconfig.py; FLOWER_UNAUTHENTICATED_API=true opens the API without credentials).\n\n"
        f"used: {used}\n\naccepted and ignored, with a warning: {unused}"
    )


__all__ = ["FLOWER_OPTIONS", "add_flower_command", "flower_main", "parse_flower_options"]
