"""Tests for the kproxy command line (``python -m kproxy`` and kproxy.cli.main)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kproxy
from kproxy import cli
from kproxy.config.settings import parse_config
from kproxy.observe.build_info import hot_path_build

REPO = Path(__file__).resolve().parents[2]

GOOD_YAML = "cluster:\n  bootstrap_servers: ['broker-1.kafka:9092']\n"
BAD_YAML = GOOD_YAML + "listeners:\n  broker_port_base: 70000\n"
BAD_LINE = "kproxy: config error: listeners.broker_port_base: must be 0-65535 (got 70000)\n"

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) \S+: .*$")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != cli.CONFIG_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def kproxy_cmd(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kproxy", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(env),
        timeout=120,
        check=False,
    )


@pytest.fixture
def good_config(tmp_path: Path) -> Path:
    path = tmp_path / "good.yaml"
    path.write_text(GOOD_YAML, encoding="utf-8")
    return path


@pytest.fixture
def bad_config(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_YAML, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------
# subprocess: python -m kproxy
# --------------------------------------------------------------------------------------


def test_version() -> None:
    result = kproxy_cmd("version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"kproxy {kproxy.__version__}\nhot path: {hot_path_build()}\n"
    assert result.stderr == ""


def test_version_flag() -> None:
    result = kproxy_cmd("--version")
    assert result.returncode == 0
    assert result.stdout == f"kproxy {kproxy.__version__}\n"


def test_no_subcommand_is_usage_error() -> None:
    result = kproxy_cmd()
    assert result.returncode == 2
    assert "usage: kproxy" in result.stderr


def test_check_config_ok(good_config: Path) -> None:
    result = kproxy_cmd("check-config", "--config", str(good_config))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"config OK: {good_config}"
    assert result.stderr == ""


def test_check_config_shipped_examples() -> None:
    for path in sorted((REPO / "config").glob("*.yaml")):
        result = kproxy_cmd("check-config", "--config", str(path))
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[0] == f"config OK: {path}"


def test_check_config_prints_the_port_map() -> None:
    """What a firewall or a Service must open, and what the listener refuses, from the
    gateway example."""
    result = kproxy_cmd("check-config", "--config", str(REPO / "config" / "gateway.yaml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "  bootstrap  0.0.0.0:9092",
        "  nodes      0.0.0.0:9100-9110 (node N on 9100 + N, N = 0..10)",
        "  node 1001  0.0.0.0:9201",
        "  node 1002  0.0.0.0:9202",
        "  node 1003  0.0.0.0:9203",
        "  admin      127.0.0.1:9644",
        "  refused    12 APIs on listener 'gateway' (left out of ApiVersions): AlterConfigs, "
        "AlterPartitionReassignments, AlterReplicaLogDirs, CreateAcls, CreatePartitions, "
        "CreateTopics, DeleteAcls, DeleteRecords, DeleteTopics, ElectLeaders, "
        "IncrementalAlterConfigs, UnregisterBroker",
    ]


def test_the_port_map_writes_ipv6_hosts_in_brackets() -> None:
    """``::`` followed by ``:9092`` would read as one address: hosts are bracketed."""
    settings = parse_config(
        {
            "cluster": {"bootstrap_servers": ["[fd00::7]:9092"]},
            "listeners": {
                "bind_host": "::",
                "advertised_host": "kafka.example.com",
                "bootstrap_port": 9092,
                "broker_port_base": 9100,
                "max_node_id": 3,
                "node_port_overrides": {7: 9207},
            },
            "admin": {"bind_host": "::1", "port": 9644},
        }
    )
    assert cli.port_map(settings)[:4] == [
        "  bootstrap  [::]:9092",
        "  nodes      [::]:9100-9103 (node N on 9100 + N, N = 0..3)",
        "  node 7     [::]:9207",
        "  admin      [::1]:9644",
    ]


def test_check_config_bad(bad_config: Path) -> None:
    result = kproxy_cmd("check-config", "--config", str(bad_config))
    assert result.returncode == 2
    assert result.stderr == BAD_LINE
    assert result.stdout == ""


def test_check_config_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    result = kproxy_cmd("check-config", "--config", str(missing))
    assert result.returncode == 2
    assert result.stderr == (
        f"kproxy: config error: <file>: cannot read {missing}: No such file or directory\n"
    )


def test_check_config_from_env(good_config: Path) -> None:
    result = kproxy_cmd("check-config", env={cli.CONFIG_ENV: str(good_config)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"config OK: {good_config}"


def test_check_config_bad_from_env(bad_config: Path) -> None:
    result = kproxy_cmd("check-config", env={cli.CONFIG_ENV: str(bad_config)})
    assert result.returncode == 2
    assert result.stderr == BAD_LINE


def test_check_config_option_wins_over_env(good_config: Path, bad_config: Path) -> None:
    result = kproxy_cmd(
        "check-config", "--config", str(good_config), env={cli.CONFIG_ENV: str(bad_config)}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"config OK: {good_config}"


def test_check_config_without_any_config() -> None:
    result = kproxy_cmd("check-config")
    assert result.returncode == 2
    assert "usage: kproxy check-config" in result.stderr
    assert "no config file: pass --config FILE or set KPROXY_CONFIG" in result.stderr
    # An empty variable counts as unset.
    result = kproxy_cmd("check-config", env={cli.CONFIG_ENV: ""})
    assert result.returncode == 2
    assert "no config file" in result.stderr


def test_analyze_without_pyspark(tmp_path: Path) -> None:
    # A child process in which pyspark cannot be imported, whether or not it is installed.
    script = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from kproxy.cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    out = str(tmp_path / "out")
    result = run_script(script, "analyze", str(tmp_path / "events.jsonl"), "--out", out)
    assert result.returncode == 2
    assert result.stderr == (
        "kproxy analyze needs the analytics extra: "
        "pip install -e '.[analytics]' (in a kproxy clone)\n"
    )
    assert not Path(out).exists()


def test_analyze_requires_input() -> None:
    result = kproxy_cmd("analyze")
    assert result.returncode == 2
    assert "usage: kproxy analyze" in result.stderr


# A child process with a fake kproxy.app, to exercise `run` end to end
# (config loading, logging set-up, --log-level, exit code pass-through).
FAKE_APP_SCRIPT = textwrap.dedent(
    """
    import logging, sys, types

    def run(settings, config_path):
        logging.getLogger("kproxy.fake").debug("debug is visible")
        logging.getLogger("kproxy.fake").info("info is visible")
        print("level", settings.log.level, "port", settings.listeners.bootstrap_port)
        return 7

    app = types.ModuleType("kproxy.app")
    app.run = run
    sys.modules["kproxy.app"] = app
    from kproxy.cli import main
    raise SystemExit(main(sys.argv[1:]))
    """
)


def run_with_fake_app(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script(FAKE_APP_SCRIPT, *args)


def run_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A Python script in a child process, in the repository, with kproxy importable."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_env(),
        timeout=120,
        check=False,
    )


def test_run_calls_app_with_settings(good_config: Path) -> None:
    result = run_with_fake_app("run", "--config", str(good_config))
    assert result.returncode == 7, result.stderr
    assert result.stdout == "level INFO port 9092\n"
    lines = result.stderr.splitlines()
    assert all(LOG_LINE.match(line) for line in lines), lines
    assert any(line.endswith("INFO kproxy.fake: info is visible") for line in lines)
    assert any(f"INFO kproxy.cli: kproxy {kproxy.__version__} starting" in x for x in lines)
    assert not any("debug is visible" in line for line in lines)


def test_run_log_level_override(good_config: Path) -> None:
    result = run_with_fake_app("run", "--config", str(good_config), "--log-level", "debug")
    assert result.returncode == 7, result.stderr
    assert result.stdout == "level DEBUG port 9092\n"
    assert any(
        line.endswith("DEBUG kproxy.fake: debug is visible") for line in result.stderr.splitlines()
    )


def test_run_log_level_from_config(tmp_path: Path) -> None:
    path = tmp_path / "warn.yaml"
    path.write_text(GOOD_YAML + "log:\n  level: WARNING\n", encoding="utf-8")
    result = run_with_fake_app("run", "--config", str(path))
    assert result.returncode == 7, result.stderr
    assert result.stdout == "level WARNING port 9092\n"
    assert result.stderr == ""


def test_run_bad_config(bad_config: Path) -> None:
    result = run_with_fake_app("run", "--config", str(bad_config))
    assert result.returncode == 2
    assert result.stderr == BAD_LINE
    assert result.stdout == ""


def test_run_bad_log_level(good_config: Path) -> None:
    result = run_with_fake_app("run", "--config", str(good_config), "--log-level", "LOUD")
    assert result.returncode == 2
    assert "must be one of DEBUG, INFO, WARNING, ERROR" in result.stderr
