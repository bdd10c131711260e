"""What a benchmark run records about the machine and the software it ran on, and the
descriptor limit its peers need."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import resource
import subprocess
from typing import Any

from bench.kroxylicious_peer import KROXYLICIOUS_VERSION
from bench.peers import REPO, haproxy_version, java_version, tansu_version


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_model": None,
        "cores": os.cpu_count(),
        "memory_gb": None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()),
    }
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model name":
                info["cpu_model"] = value.strip()
            elif key.strip() == "CPU(s)":
                info["cores"] = int(value.strip())
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    return info


def kproxy_revision() -> str:
    """kproxy's version and the commit measured, "0.1.0 @ 575fc1e", saying so when the
    tree has uncommitted changes."""
    import kproxy

    commit = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                             capture_output=True, text=True, timeout=10)  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO, capture_output=True, text=True, timeout=10)  # fmt: skip
        if git.returncode == 0:
            commit = git.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout else "")
    return f"{kproxy.__version__}" + (f" @ {commit}" if commit else "")


def software_versions() -> dict[str, str | None]:
    import confluent_kafka

    from tests.peers.kafka_install import KAFKA_VERSION

    try:
        uv: str | None = importlib.metadata.version("uvloop")
    except importlib.metadata.PackageNotFoundError:
        uv = None
    return {
        "kproxy": kproxy_revision(),
        "uvloop": uv,
        "confluent-kafka": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "tansu": tansu_version(),
        "apache-kafka": KAFKA_VERSION,
        "java": java_version(),
        "haproxy": haproxy_version(),
        "kroxylicious": KROXYLICIOUS_VERSION,
    }


def raise_fd_limit() -> None:
    """3,000 idle connections need ~6,000 descriptors in a proxy (client and broker side)
    and 3,000 in the client and the broker; every child inherits this limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
