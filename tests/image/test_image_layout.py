"""The container image's start, as `docker run --read-only` would do it: no registry
serves the base image here, so the test lays out the Dockerfile's filesystem itself in a
mount and network namespace of its own (its user and group, working directory, volume
and configuration path, everything else read-only) and runs the image's entrypoint as
that user with each documented configuration. kproxy must come up healthy, write its
event log only into the volume, answer the image's HEALTHCHECK, and stop cleanly.

Needs root (for the namespaces), as CI has."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.builds import source_copy

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("layout_driver.py")

# Where an interpreter finds kproxy: its base installation, the site directories outside
# it (a virtual environment's), and the clone an editable install's finder points at
# when kproxy is in none of them.
WHERE_KPROXY_IS = """
import json, os, site, sys
from pathlib import Path
import kproxy
base = sys.base_prefix
sites = [d for d in site.getsitepackages() if os.path.isdir(d)]
outside = [d for d in sites if not d.startswith(base + os.sep)]
package = Path(kproxy.__file__).resolve().parent
found_in = [d for d in sites if Path(d).resolve() == package.parent]
print(json.dumps({
    "python_home": base,
    "site_dirs": outside,
    "source": None if found_in else str(package.parent),
    "kproxy_file": str(package / "__init__.py"),
}))
"""


def where_kproxy_is(python: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    # -P: the working directory (a clone, perhaps) is not where the image finds kproxy.
    run = subprocess.run(
        [python, "-P", "-c", WHERE_KPROXY_IS], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    found: dict[str, Any] = json.loads(run.stdout)
    return found


def dockerfile_final_stage() -> dict[str, Any]:
    """USER, WORKDIR, VOLUME, ENTRYPOINT, CMD and HEALTHCHECK of the Dockerfile's last
    stage (continuation lines joined; JSON forms only, as hadolint asks)."""
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    stage = text.rsplit("\nFROM ", 1)[1]
    found: dict[str, Any] = {}
    for line in stage.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word in ("USER", "WORKDIR"):
            found[word] = rest.strip()
        elif word in ("VOLUME", "ENTRYPOINT", "CMD"):
            found[word] = json.loads(rest)
        elif word == "HEALTHCHECK":
            found[word] = json.loads(rest.split(" CMD ", 1)[1])
        elif word == "RUN" and "useradd" in rest:
            found["RUN"] = rest
    return found


def image_spec(
    config: Path, python: str = sys.executable, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """What the layout driver needs to run the image's entrypoint with `config` and the
    kproxy that `python` imports (in `env`)."""
    image = dockerfile_final_stage()
    user, _, group = image["USER"].partition(":")
    uid, gid = int(user), int(group or 0)  # no group named: docker runs it as group 0
    argv = image["ENTRYPOINT"] + image["CMD"]
    assert argv[0] == "kproxy" and "--config" in argv
    config_path = argv[argv.index("--config") + 1]
    settings = yaml.safe_load(config.read_text())
    healthcheck = image["HEALTHCHECK"]
    assert healthcheck[0] == "python"
    volumes = image.get("VOLUME", [])
    return {
        **where_kproxy_is(python, env),
        "config": str(config),
        "uid": uid,
        "gid": gid,
        "workdir": image.get("WORKDIR", "/"),
        "volumes": volumes,
        "config_path": config_path,
        "entrypoint": ["-m", "kproxy", *argv[1:]],
        "healthcheck": healthcheck[1:],
        "admin_port": settings["admin"]["port"],
        "events_dir": settings["events"]["dir"],
    }


def documented(name: str, tmp_path: Path) -> Path:
    """config/NAME.yaml as documented, its brokers on a loopback port nothing serves (the
    namespace has no other address to reach)."""
    settings = yaml.safe_load((REPO / "config" / name).read_text())
    settings["cluster"]["bootstrap_servers"] = ["127.0.0.1:1"]
    settings["cluster"].pop("dial_overrides", None)
    out = tmp_path / name
    out.write_text(yaml.safe_dump(settings))
    out.chmod(0o644)
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="the image's layout needs root namespaces")
@pytest.mark.parametrize("name", ["gateway.yaml", "sidecar.yaml"])
def test_the_image_starts_with_each_documented_configuration(name: str, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    spec = image_spec(documented(name, tmp_path))
    report = run_image(spec)
    assert_image_ran(spec, report)


@pytest.mark.skipif(os.geteuid() != 0, reason="the image's layout needs root namespaces")
def test_the_image_runs_the_kproxy_of_a_virtual_environment(tmp_path: Path) -> None:
    """kproxy installed (not editable) in a virtual environment under a directory only
    root may enter, as `python -m venv` in a fresh temporary directory makes it: the
    image runs that kproxy, not the one of the interpreter the venv was made from."""
    venv = tmp_path / "private" / "venv"
    venv.parent.mkdir(mode=0o700)
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    python = str(venv / "bin" / "python")
    # The venv's own kproxy, whatever PYTHONPATH the suite runs with (the compiled build's
    # run puts its copy there).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # From a copy: a build writes its build/ directory beside the sources it builds.
    source = source_copy(mkdir(tmp_path / "source"))
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", str(source)],
        check=True, capture_output=True, timeout=300, env=env,
    )  # fmt: skip
    config_dir = tmp_path / "config"
    config_dir.mkdir(mode=0o755)
    spec = image_spec(documented("gateway.yaml", config_dir), python, env)
    assert spec["site_dirs"] and spec["source"] is None, spec
    assert spec["kproxy_file"].startswith(str(venv))
    report = run_image(spec)
    assert report["kproxy_file"] == "/mnt/site0/kproxy/__init__.py", report["kproxy_file"]
    assert_image_ran(spec, report)


def mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def run_image(spec: dict[str, Any]) -> dict[str, Any]:
    """The layout driver's report of the image run with `spec`, in namespaces of its own."""
    argv = ["unshare", "--mount", "--net", "--propagation", "private"]
    argv += [sys.executable, str(DRIVER), json.dumps(spec)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, shlex.join(argv) + "\n" + run.stderr[-3000:]
    report: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return report


def assert_image_ran(spec: dict[str, Any], report: dict[str, Any]) -> None:
    log = report.pop("log")
    assert "Permission denied" not in log and "Traceback" not in log, log[-3000:]
    assert report["healthz"] == 200, log[-3000:]
    assert report["readyz"] == 503  # no cluster in the namespace: not ready, still alive
    assert report["healthcheck_exit"] == 0
    assert report["events_dir_owner"] == spec["uid"], "the event log is not in the volume"
    assert report["root_writable"] is False, "the root filesystem was not read-only"
    assert report["exit_code"] == 0, log[-3000:]
