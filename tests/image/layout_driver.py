"""Runs inside `unshare --mount --net`: lays out the container image's filesystem as the
Dockerfile does, starts kproxy's entrypoint as the image's user with the root filesystem
read-only, checks what `docker run --read-only` would need, and prints a JSON report.

Argument: a JSON object with python_home, site_dirs and source (where the interpreter
under test finds kproxy and its dependencies: see `image_spec`), config (a file), uid,
gid, workdir, volumes, config_path, entrypoint (argv after the interpreter),
healthcheck (argv), admin_port.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

DEADLINE_SECONDS = 30.0
VENV = "/mnt/venv"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True)


def lay_out(spec: dict[str, Any]) -> str:
    """The image's filesystem: its /etc/kproxy/kproxy.yaml, its working directory and
    volume owned by its user, the interpreter where that user can reach it, and every
    other path read-only. Returns the interpreter's path."""
    sh("ip", "link", "set", "lo", "up")
    sh("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/mnt")
    python = "/mnt/python"
    os.mkdir(python)
    sh("mount", "--bind", spec["python_home"], python)  # /root is not readable by 10001
    lay_out_packages(spec, python)
    shutil.copytree("/etc", "/mnt/etc", symlinks=True, ignore_dangling_symlinks=True)
    config_dir = os.path.dirname("/mnt" + spec["config_path"])
    os.makedirs(config_dir, mode=0o755, exist_ok=True)
    shutil.copy(spec["config"], "/mnt" + spec["config_path"])
    os.chmod("/mnt" + spec["config_path"], 0o644)
    sh("mount", "--bind", "/mnt/etc", "/etc")
    for volume in spec["volumes"]:  # as docker makes them: writable, the image's owner
        parent = os.path.dirname(volume)
        sh("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", parent)
        os.makedirs(volume, mode=0o750, exist_ok=True)
        os.chown(volume, spec["uid"], spec["gid"])
    sh("mount", "-o", "remount,bind,ro", "/")
    return python


def lay_out_packages(spec: dict[str, Any], python: str) -> None:
    """A virtual environment at /mnt/venv on the bound interpreter that sees what the
    interpreter under test sees: its site directories and kproxy's source, each bound
    where the image's user can reach it (a venv or a clone may sit under a directory
    only root may enter, such as a 0700 temporary directory or /root)."""
    sh(f"{python}/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages", VENV)
    lines = []
    for index, site_dir in enumerate(spec["site_dirs"]):
        bound = f"/mnt/site{index}"
        os.mkdir(bound)
        sh("mount", "--bind", site_dir, bound)
        lines.append(f"import site; site.addsitedir({bound!r})")
    if spec["source"] is not None:  # an editable install: its finder names the clone's path
        os.mkdir("/mnt/source")
        sh("mount", "--bind", spec["source"], "/mnt/source")
        lines.append("import sys; sys.path.insert(0, '/mnt/source')")
    version = "python{}.{}".format(*sys.version_info[:2])
    pth = f"{VENV}/lib/{version}/site-packages/kproxy-image.pth"
    with open(pth, "w") as out:
        out.write("\n".join(lines) + "\n")


def as_user(spec: dict[str, Any], argv: list[str]) -> list[str]:
    ids = ["--reuid", str(spec["uid"]), "--regid", str(spec["gid"]), "--clear-groups"]
    return ["setpriv", *ids, "--inh-caps=-all", *argv]


def user_env(python: str) -> dict[str, str]:
    # The interpreter's own libpython: its RPATH names /root, which the user cannot enter.
    return {
        "PATH": f"{VENV}/bin:{python}/bin:/usr/bin:/bin",
        "LD_LIBRARY_PATH": f"{python}/lib",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def main() -> int:
    spec = json.loads(sys.argv[1])
    python = lay_out(spec)
    report: dict[str, Any] = {}
    where = subprocess.run(
        as_user(spec, [f"{VENV}/bin/python3", "-c", "import kproxy; print(kproxy.__file__)"]),
        cwd=spec["workdir"],
        capture_output=True, text=True, env=user_env(python),
    )  # fmt: skip
    report["kproxy_file"] = where.stdout.strip() or where.stderr.strip()
    proc = subprocess.Popen(
        as_user(spec, [f"{VENV}/bin/python3", *spec["entrypoint"]]),
        cwd=spec["workdir"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=user_env(python),
    )
    admin = f"http://127.0.0.1:{spec['admin_port']}"
    deadline = time.monotonic() + DEADLINE_SECONDS
    while get(f"{admin}/healthz") != 200 and proc.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    report["healthz"] = get(f"{admin}/healthz")
    report["readyz"] = get(f"{admin}/readyz")
    check = subprocess.run(
        as_user(spec, [f"{VENV}/bin/python3", *spec["healthcheck"]]),
        capture_output=True, text=True, env=user_env(python),
    )  # fmt: skip
    report["healthcheck_exit"] = check.returncode
    events = os.path.join(spec["workdir"], spec["events_dir"])
    report["events_dir_owner"] = os.stat(events).st_uid if os.path.isdir(events) else None
    probe = subprocess.run(as_user(spec, ["touch", "/var/tmp/kproxy-probe"]), capture_output=True)
    report["root_writable"] = probe.returncode == 0
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        output, _ = proc.communicate(timeout=DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    report["exit_code"] = proc.returncode
    report["log"] = output
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
