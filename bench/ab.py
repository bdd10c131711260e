"""``python -m bench ab WORKLOAD``: the quick A/B a developer runs before and after a
change to kproxy's hot path, in minutes.

One workload, every path once per round, rounds interleaved: direct, haproxy (the
floor), kproxy on uvloop from the working tree and, with ``--baseline REV``, kproxy on
uvloop from that git revision (checked out in a temporary worktree); with
``--standard-loop`` both kproxys run on the standard asyncio loop instead. Rounds are longer
than the full run's (``--scale``, 4 by default) so that one round's ratio holds still,
and the figures that hold stillest on a shared machine are there: every proxy's CPU per
message moved (haproxy's too) from /proc, and kproxy's CPU per request and per GB from
its own counters. Each figure is the median over the
rounds with its min-max spread.

    python -m bench ab latency --baseline HEAD~1 --rounds 7
    python -m bench ab produce-1KiB
    python -m bench ab latency --baseline HEAD --compile-baseline   # mypyc vs pure Python
    python -m bench ab connections --baseline HEAD~1 --standard-loop
    python -m bench ab latency --baseline HEAD --baseline-set events.enabled=false --paired
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from bench.ab_tables import (
    object_lines,
    paired_lines,
    run_queue_lines,
    stability_lines,
    summary_lines,
    syscall_lines,
    wakeup_lines,
)
from bench.results_file import COMPILED_PATHS
from bench.steal import run_steal
from bench.wakeup_cost import wakeup_words

REPO = Path(__file__).resolve().parents[1]
PAIRED_HELP = (
    "every round of a latency, consume or produce workload, the paths take "
    "TURNS turns each in one client process, the order rotated every turn (bench.paired; "
    "without TURNS: 200 for latency, 20 for produce, 10 for consume)"
)
SAME_PROCESSES_HELP = (
    "keep one kproxy process per path for every round (default: a fresh one each round)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="one workload (python -m bench list)")
    p.add_argument("--baseline", metavar="REV", help="also run kproxy at this git revision")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--scale", type=float, default=4.0, help="message counts x this (default 4)")
    p.add_argument("--no-haproxy", action="store_true", help="leave haproxy out")
    p.add_argument("--same-processes", action="store_true", help=SAME_PROCESSES_HELP)
    p.add_argument(
        "--paired", type=int, nargs="?", const=-1, default=0, metavar="TURNS", help=PAIRED_HELP
    )
    p.add_argument("--out", type=Path, default=None, help="results.json here (default: a temp dir)")
    p.add_argument("--profile", type=Path, default=None, help="py-spy profiles of kproxy here")
    p.add_argument(
        "--syscalls",
        type=Path,
        default=None,
        metavar="DIR",
        help="perf trace summaries of every proxy here; prints syscalls per message",
    )
    p.add_argument(
        "--native-profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="perf record -g of every proxy here; prints CPU per message by object "
        "(kernel, CPython, kproxy's mypyc build, uvloop, libc)",
    )
    p.add_argument(
        "--python-floor",
        action="store_true",
        help="also run bench.python_floor: Python forwarding bytes, parsing nothing (on "
        "uvloop, or with --standard-loop on the standard loop)",
    )
    p.add_argument(
        "--standard-loop",
        action="store_true",
        help="run kproxy (the --baseline revision's and, with --compiled, the compiled "
        "build too) on the standard asyncio loop instead of uvloop (the paths "
        "kproxy-asyncio, kproxy-compiled-asyncio)",
    )
    p.add_argument(
        "--compiled",
        action="store_true",
        help="also run this checkout built with mypyc, as the image runs it: kproxy-compiled "
        "(kproxy-compiled-asyncio with --standard-loop)",
    )
    p.add_argument(
        "--baseline-python",
        metavar="PYTHON",
        default=sys.executable,
        help="run the --baseline revision's kproxy on this interpreter, one with kproxy's "
        "dependencies installed (--baseline HEAD --baseline-python .../python3.12: the same "
        "code on two Pythons)",
    )
    p.add_argument(
        "--baseline-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run the --baseline revision's kproxy with this setting changed (a dotted key, "
        "a YAML value; repeatable): --baseline HEAD --baseline-set events.enabled=false "
        "A/Bs what a setting costs on the same code",
    )
    p.add_argument(
        "--compile-baseline",
        action="store_true",
        help="build the baseline checkout with mypyc (KPROXY_COMPILE=1, setup.py): "
        "kproxy-base is then the compiled build of --baseline",
    )


@contextlib.contextmanager
def checkout(revision: str | None) -> Iterator[Path | None]:
    """A detached worktree of ``revision`` (removed afterwards), or None."""
    if revision is None:
        yield None
        return
    where = Path(tempfile.mkdtemp(prefix="kproxy-ab-")) / "baseline"
    git = ["git", "-C", str(REPO)]
    subprocess.run([*git, "worktree", "add", "--detach", str(where), revision], check=True,
                   capture_output=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(where)], check=False,
                       capture_output=True)  # fmt: skip
        shutil.rmtree(where.parent, ignore_errors=True)  # what the worktree left there


def compile_in_place(source: Path) -> None:
    """Compile a checkout's hot path with mypyc beside its sources (setup.py)."""
    subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=source,
        env={**os.environ, "KPROXY_COMPILE": "1"},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def source_copy(into: Path, source: Path = REPO) -> Path:
    """``source``'s kproxy and build files (setup.py, pyproject.toml, README.md) copied
    into ``into``, without any compiled module or bytecode."""
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(source / name, into / name)
    skip = shutil.ignore_patterns("*.so", "__pycache__")
    shutil.copytree(source / "kproxy", into / "kproxy", ignore=skip)
    return into


def compiled_copy(into: Path, source: Path = REPO) -> Path:
    """``source`` copied into ``into`` and compiled there with mypyc: the build the
    container image runs (Dockerfile)."""
    compile_in_place(source_copy(into, source))
    return into


def json_from_compiled_copy(module_args: list[str]) -> dict[str, object]:
    """``python -m MODULE ARGS`` (a bench module's ``--json-only`` run) on a mypyc build
    of this checkout in a temporary copy: what it printed, read as JSON."""
    with tempfile.TemporaryDirectory(prefix="kproxy-compiled-") as tmp:
        copy = compiled_copy(Path(tmp))
        # The copy first on the path: its compiled kproxy, this checkout's bench and tests.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(REPO)])}
        done = subprocess.run([sys.executable, "-m", *module_args], cwd=copy, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        result: dict[str, object] = json.loads(done.stdout)
        return result


def setting_changes(pairs: list[str]) -> dict[str, Any]:
    """``--baseline-set`` as dotted key: value, each value read as YAML (as kproxy's
    configuration file would read it)."""
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not all(key.split(".")):
            raise SystemExit(f"--baseline-set {pair!r}: not KEY=VALUE with a dotted KEY")
        changes[key] = yaml.safe_load(text)
    return changes


def check_settings(source: Path, loop: str, python: str, settings: dict[str, Any]) -> None:
    """Refuse, before anything starts, ``--baseline-set`` settings that the baseline's
    own kproxy would refuse: its ``check-config``, on its interpreter, against the
    configuration kproxy-base would run with."""
    from bench.kproxy_peer import KproxyPeer

    with tempfile.TemporaryDirectory(prefix="kproxy-ab-settings-") as tmp:
        try:
            peer = KproxyPeer("kproxy-base", loop, ["127.0.0.1:9092"], Path(tmp),
                              source=source, python=python, settings=settings)  # fmt: skip
        except ValueError as exc:
            raise SystemExit(f"--baseline-set: {exc}") from None
        error = peer.config_error()
    if error is not None:
        raise SystemExit(f"--baseline-set: the baseline's kproxy refuses it: {error}")


def compiled_path(loop: str) -> str:
    """The path of this checkout's mypyc build on `loop` ("uvloop" or "asyncio")."""
    return next(path for path, on in COMPILED_PATHS.items() if on == loop)


def ab_paths(args: argparse.Namespace) -> tuple[list[str], str]:
    """The paths an A/B runs, in order, and the loop its kproxys run on (the tree's and
    the baseline's alike)."""
    paths = ["direct", *([] if args.no_haproxy else ["haproxy"])]
    loop = "asyncio" if args.standard_loop else "uvloop"
    paths += [*(["python-floor"] if args.python_floor else []), f"kproxy-{loop}"]
    if args.compiled:
        paths.append(compiled_path(loop))
    if args.baseline:
        paths.append("kproxy-base")
    return paths, loop


def main_ab(args: argparse.Namespace) -> int:
    from bench.catalog import workloads
    from bench.harness import Harness, Options
    from bench.machine import raise_fd_limit

    if args.workload not in {w.name for w in workloads(quick=False)}:
        raise SystemExit(f"unknown workload {args.workload!r} (python -m bench list)")
    paths, loop = ab_paths(args)
    out = args.out or Path(tempfile.mkdtemp(prefix="kproxy-ab-results-"))
    out.mkdir(parents=True, exist_ok=True)
    raise_fd_limit()
    if args.compile_baseline and not args.baseline:
        raise SystemExit("--compile-baseline needs --baseline REV (HEAD: the same code)")
    if args.baseline_python != sys.executable and (not args.baseline or args.compile_baseline):
        # The build is made by, and for, the interpreter running the harness.
        raise SystemExit("--baseline-python needs --baseline REV, and no --compile-baseline")
    settings = setting_changes(args.baseline_set)
    if settings and not args.baseline:
        raise SystemExit("--baseline-set needs --baseline REV (HEAD: the same code)")
    if shutil.which(args.baseline_python) is None:
        raise SystemExit(f"--baseline-python {args.baseline_python}: no such interpreter")
    paired = ""
    if args.paired:
        from bench.paired import TURNS_BY_KIND, pairable

        wl = next(w for w in workloads(quick=False) if w.name == args.workload)
        why_not = pairable(wl)
        if why_not is not None:
            raise SystemExit(f"--paired: {why_not}")
        paired = f", {args.paired if args.paired > 0 else TURNS_BY_KIND[wl.kind]} turns a path"
        if args.profile or args.syscalls or args.native_profile:
            raise SystemExit("--paired records no profiles (the paths share every round)")
    with checkout(args.baseline) as baseline:
        if baseline is not None and settings:
            check_settings(baseline, loop, args.baseline_python, settings)
        if baseline is not None and args.compile_baseline:
            compile_in_place(baseline)
        opts = Options(
            rounds=args.rounds,
            workloads=[args.workload],
            paths=paths,
            scale=args.scale,
            out_json=out / "results.json",
            out_md=None,
            out_png=None,
            profile_dir=args.profile,
            syscalls_dir=args.syscalls,
            native_profile_dir=args.native_profile,
            baseline_source=baseline,
            baseline_loop=loop,
            floor_loop=loop,
            baseline_python=args.baseline_python,
            baseline_settings=settings,
            fresh_kproxy=not args.same_processes,
        )
        if args.paired:
            from bench.paired import PairedHarness

            results = PairedHarness(opts, args.paired).run()
        else:
            results = Harness(opts).run()
    against = f", baseline {args.baseline}" if args.baseline else ""
    if args.baseline and args.baseline_python != sys.executable:
        against += f" on {args.baseline_python}"
    if settings:
        against += " with " + ", ".join(args.baseline_set)
    paired = ""
    if args.paired:
        turns = (
            args.paired
            if args.paired > 0
            else TURNS_BY_KIND[results["workloads"][args.workload]["kind"]]
        )
        paired = f", {turns} turns a path a round"
    print(f"\n{args.workload}, {args.rounds} rounds{paired}, scale {args.scale}{against}: "
          f"{opts.out_json}")  # fmt: skip
    for line in summary_lines(results, args.workload):
        print(line)
    print(f"CPU taken by the host (steal) per run: {run_steal(results, args.workload)}")
    machine = results["machine"]
    print(
        "A wakeup across cores / within one: "
        + wakeup_words(machine.get("wakeup"), machine.get("wakeup_end"))
    )
    _print_table(wakeup_lines(results, args.workload))
    _print_table(run_queue_lines(results, args.workload))
    _print_table(stability_lines(results))
    if args.syscalls:
        _print_table(syscall_lines(results, args.workload))
    if args.native_profile:
        _print_table(object_lines(results, args.workload))
    if args.baseline:
        # The tree's build that matches the baseline's, when there is one.
        tree = compiled_path(loop) if args.compiled and args.compile_baseline else f"kproxy-{loop}"
        _print_table(paired_lines(results, args.workload, tree, "kproxy-base"))
    return 0


def _print_table(lines: list[str]) -> None:
    """A table after the summary, a blank line before it; nothing for none."""
    if lines:
        print()
        print("\n".join(lines))
