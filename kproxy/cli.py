"""The ``kproxy`` command line (also ``python -m kproxy``)."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import cast

from kproxy import __version__
from kproxy.analytics.arguments import DEFAULT_MASTER, add_analyze_arguments
from kproxy.config.settings import (
    LOG_LEVELS,
    ConfigError,
    LogSettings,
    Settings,
    config_json_schema,
    load_config,
)
from kproxy.protocol.apis import APIS
from kproxy.protocol.hostport import bracketed

__all__ = ["CONFIG_ENV", "LOG_FORMAT", "build_parser", "configure_logging", "main"]

CONFIG_ENV = "KPROXY_CONFIG"
"""Environment variable naming the config file when ``--config`` is not given."""

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

EXIT_USAGE = 2
"""Exit code for configuration errors and missing optional extras (like argparse)."""

# kproxy installs from a clone (the `kproxy` on PyPI is another project): the hints say
# so, as the README does.
DEMO_HINT = "kproxy demo needs the demo extra: pip install -e '.[demo]' (in a kproxy clone)"
ANALYZE_HINT = (
    "kproxy analyze needs the analytics extra: pip install -e '.[analytics]' (in a kproxy clone)"
)
KAFKA_SINK_HINT = (
    "events.sink kafka needs the kafka extra: pip install -e '.[kafka]' (in a kproxy clone)"
)

logger = logging.getLogger("kproxy.cli")


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _resolve_config_path(args: argparse.Namespace) -> str:
    path: str | None = args.config or os.environ.get(CONFIG_ENV) or None
    if path is None:
        parser: argparse.ArgumentParser = args.parser
        parser.error(f"no config file: pass --config FILE or set {CONFIG_ENV}")
    return path


def _load(path: str) -> Settings | None:
    try:
        return load_config(path)
    except ConfigError as exc:
        _err(f"kproxy: config error: {exc}")
        return None


def configure_logging(level: str) -> None:
    """Plain single-line logging to stderr: timestamp, level, logger name, message (a
    worker's, `runtime.workers`, names the worker after the logger)."""
    worker = os.environ.get("KPROXY_WORKER")  # kproxy.app.WORKER_INDEX_ENV, not imported here
    fmt = LOG_FORMAT if worker is None else LOG_FORMAT.replace("%(name)s", f"%(name)s[{worker}]")
    logging.basicConfig(level=level, format=fmt, stream=sys.stderr, force=True)


# --------------------------------------------------------------------------------------
# subcommands
# --------------------------------------------------------------------------------------


def _cmd_version(args: argparse.Namespace) -> int:
    from kproxy.observe.build_info import hot_path_build

    print(f"kproxy {__version__}")
    print(f"hot path: {hot_path_build()}")
    return 0


def _cmd_check_config(args: argparse.Namespace) -> int:
    path = _resolve_config_path(args)
    settings = _load(path)
    if settings is None:
        return EXIT_USAGE
    print(f"config OK: {path}")
    for line in [*port_map(settings), *tls_summary(settings), *policy_summary(settings)]:
        print(line)
    return 0


def port_map(settings: Settings) -> list[str]:
    """The ports kproxy listens on, for a firewall or a Service (0: chosen by the OS)."""
    lst = settings.listeners
    bind = bracketed(lst.bind_host)
    lines = [f"  bootstrap  {bind}:{lst.bootstrap_port or 'any'}"]
    if lst.sni is not None:
        lines.append(
            f"  nodes      the same port, by TLS server name: {lst.sni.node_host_pattern} "
            f"(bootstrap: {lst.sni.bootstrap_host})"
        )
    elif lst.broker_port_base:
        last = lst.broker_port_base + lst.max_node_id
        lines.append(
            f"  nodes      {bind}:{lst.broker_port_base}-{last}"
            f" (node N on {lst.broker_port_base} + N, N = 0..{lst.max_node_id})"
        )
    else:
        lines.append(f"  nodes      {bind}: a port the OS chooses per node")
    for node_id, port in sorted(lst.node_port_overrides.items() if lst.sni is None else ()):
        lines.append(f"  node {node_id:<5} {bind}:{port}")
    if settings.admin.enabled:
        admin = bracketed(settings.admin.bind_host)
        lines.append(f"  admin      {admin}:{settings.admin.port or 'any'}")
    return lines


def policy_summary(settings: Settings) -> list[str]:
    """The APIs the listener refuses (`listeners.api_policy`), by name."""
    lst = settings.listeners
    denied = sorted(APIS[key].name for key in lst.denied_apis())
    if not denied:
        return []
    shown = "advertised in ApiVersions" if lst.advertises_denied() else "left out of ApiVersions"
    names = ", ".join(denied)
    return [f"  refused    {len(denied)} APIs on listener {lst.name!r} ({shown}): {names}"]


def tls_summary(settings: Settings) -> list[str]:
    """What TLS each side speaks, for the operator reading check-config."""
    lines = []
    served = settings.listeners.tls
    if served is not None:
        auth = served.effective_client_auth
        certs = {"none": "", "optional": ", client certificates verified when sent"}
        lines.append(
            f"  clients    TLS {served.min_version}+"
            + certs.get(auth, ", client certificate required")
        )
    upstream = settings.cluster.tls
    if upstream is not None:
        names = "verified" if upstream.verify_hostname else "NOT verified"
        mtls = ", client certificate" if upstream.certificate else ""
        lines.append(f"  brokers    TLS {upstream.min_version}+, names {names}{mtls}")
    return lines


def _cmd_run(args: argparse.Namespace) -> int:
    path = _resolve_config_path(args)
    settings = _load(path)
    if settings is None:
        return EXIT_USAGE
    if args.log_level is not None:
        settings = settings.model_copy(update={"log": LogSettings(level=args.log_level)})
    events = settings.events
    if events.enabled and "kafka" in events.sink and not _importable("confluent_kafka"):
        # Said before starting, not as every event dropped once the writer tries.
        _err(KAFKA_SINK_HINT)
        return EXIT_USAGE
    configure_logging(settings.log.level)
    logger.info("kproxy %s starting with config %s", __version__, path)
    # Imported lazily: the proxy pulls in asyncio/uvloop/aiohttp, which the other
    # subcommands do not need.
    app = importlib.import_module("kproxy.app")
    workers = settings.runtime.worker_count()
    if workers > 1 and app.WORKER_INDEX_ENV not in os.environ:
        supervisor = importlib.import_module("kproxy.workers.supervisor")
        supervise = cast(Callable[[Settings, str, int], int], supervisor.supervise)
        return supervise(settings, path, workers)
    run = cast(Callable[[Settings, str], int], app.run)
    return run(settings, path)


def _cmd_config_schema(args: argparse.Namespace) -> int:
    print(json.dumps(config_json_schema(), indent=2, sort_keys=True))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    if not _importable("confluent_kafka"):
        _err(DEMO_HINT)
        return EXIT_USAGE
    demo = importlib.import_module("kproxy.demo.run")
    run_demo = cast(Callable[[float | None, int, float, int], int], demo.run_demo)
    return run_demo(args.duration, args.brokers, args.leader_interval, args.port)


def _cmd_analyze(args: argparse.Namespace) -> int:
    # The analytics extra: PySpark runs the job, matplotlib draws the report's plots.
    if not (_importable("pyspark") and _importable("matplotlib")):
        _err(ANALYZE_HINT)
        return EXIT_USAGE
    analytics = importlib.import_module("kproxy.analytics.cli")
    run_analyze = cast(Callable[[argparse.Namespace], int], analytics.run_analyze)
    return run_analyze(args)


# --------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535: {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(LOG_LEVELS)}: {text!r}")
    return level


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        "-c",
        metavar="FILE",
        help=f"YAML config file (default: ${CONFIG_ENV})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kproxy",
        description="A Kafka protocol-aware proxy that rewrites every broker address.",
    )
    parser.add_argument("--version", action="version", version=f"kproxy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("version", help="print the version and whether the hot path is compiled")
    p.set_defaults(func=_cmd_version, parser=p)

    p = sub.add_parser("check-config", help="validate a config file and exit")
    _add_config_option(p)
    p.set_defaults(func=_cmd_check_config, parser=p)

    p = sub.add_parser(
        "config-schema", help="print the JSON Schema of the configuration (docs/config.schema.json)"
    )
    p.set_defaults(func=_cmd_config_schema, parser=p)

    p = sub.add_parser("run", help="run the proxy until SIGTERM/SIGINT")
    _add_config_option(p)
    p.add_argument(
        "--log-level",
        type=_log_level,
        metavar="LEVEL",
        help=f"override log.level ({', '.join(LOG_LEVELS)})",
    )
    p.set_defaults(func=_cmd_run, parser=p)

    p = sub.add_parser("demo", help="run a local demo cluster behind kproxy (needs the demo extra)")
    p.add_argument(
        "--duration",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="stop after this many seconds (default: run until interrupted)",
    )
    p.add_argument(
        "--brokers",
        type=_positive_int,
        default=3,
        metavar="N",
        help="number of brokers (default: 3)",
    )
    p.add_argument(
        "--leader-interval",
        type=_positive_float,
        default=5.0,
        metavar="SECONDS",
        help="move a partition leader this often (default: 5)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=0,
        metavar="PORT",
        help="kproxy's bootstrap port on 127.0.0.1 (default: one the OS chooses)",
    )
    p.set_defaults(func=_cmd_demo, parser=p)

    p = sub.add_parser(
        "analyze",
        help="analyze kproxy events (files or a Kafka topic) with Spark, in batch or "
        "following them (needs the analytics extra)",
    )
    add_analyze_arguments(p, default_master=DEFAULT_MASTER)
    p.set_defaults(func=_cmd_analyze, parser=p)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kproxy`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = cast(Callable[[argparse.Namespace], int], args.func)
    return func(args)
