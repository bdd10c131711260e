"""`python -m bench ab`'s summary: medians and spreads per path, the ratio to direct
taken round by round, any proxy's CPU (and of it user space) per message, and kproxy's
CPU per request in microseconds; and the loop the tree's and the baseline's kproxy run on
(`--standard-loop`), and the interpreter the baseline's runs on (`--baseline-python`) and
the settings it runs with (`--baseline-set`)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import bench.kproxy_peer
import bench.upstreams
from bench.ab import ab_paths, add_arguments
from bench.ab_tables import paired_lines, summary_lines
from bench.builds import checkout
from bench.upstreams import Upstream

REPO = Path(__file__).resolve().parents[2]
# The kproxy the hot path's targets were set on, from before `runtime.event_loop`
# (docs/performance.md, "Against the code the targets were set on").
FIRST_WAVE = "852bfb0"


def run(path: str, r: int, p50: float, cpu_100k: float | None = None) -> dict[str, Any]:
    result = {"p50_ms": p50, "messages": 1000}
    record: dict[str, Any] = {"round": r, "path": path, "ok": True, "result": result}
    record["broker"] = {"cpu_us_per_message": 2.0 + r}  # every path's broker, kproxy's too
    if cpu_100k is not None:
        record["kproxy"] = {"cpu_s_per_100k_requests": cpu_100k, "cpu_s_per_gb_wire": 0.5}
        record["proxy"] = {"cpu_seconds": cpu_100k / 100, "cpu_user_seconds": cpu_100k / 400}
    return record


def test_summary_takes_ratios_per_round_and_cpu_per_request_in_microseconds() -> None:
    results = {
        "meta": {"rounds": 2},
        "paths": {"direct": {}, "kproxy-uvloop": {}},
        "workloads": {
            "latency": {
                "metrics": [{"key": "p50_ms", "label": "p50", "unit": "ms"}],
                "runs": [
                    run("direct", 0, 0.2),
                    run("kproxy-uvloop", 0, 0.3, 17.0),
                    run("direct", 1, 0.4),  # a slow round for everyone
                    run("kproxy-uvloop", 1, 0.6, 15.0),
                ],
            }
        },
    }
    header, direct, kproxy = (line.split("  ") for line in summary_lines(results, "latency"))
    assert [c.strip() for c in header if c.strip()][-5:] == [
        "CPU us/message",
        "user us/message",
        "CPU us/request",
        "CPU s/GB",
        "broker CPU us/message",
    ]
    cells = [c.strip() for c in kproxy if c.strip()]
    assert cells[0] == "kproxy-uvloop"
    assert cells[1] == "0.45 [0.30-0.60]"
    assert cells[2] == "1.50 [1.50-1.50]"  # 0.3/0.2 and 0.6/0.4: the drift cancels
    assert cells[3] == "160.0 [150.0-170.0]"  # 0.17 s over 1,000 messages: 170 us
    assert cells[4] == "40.0 [37.5-42.5]"  # of it in user space: 0.0425 s over 1,000
    assert cells[5] == "160.0 [150.0-170.0]"  # seconds per 100k requests -> us per request
    assert cells[6] == "0.500 [0.500-0.500]"
    assert cells[7] == "2.50 [2.00-3.00]"  # the broker's, round by round
    assert [c.strip() for c in direct if c.strip()][2:] == [
        "-",
        "-",
        "-",
        "-",
        "-",
        "2.50 [2.00-3.00]",
    ]


def test_a_baseline_is_compared_round_by_round() -> None:
    # Round 1 is slow for both builds: their ratio holds still while each one's own
    # figures double.
    results = {
        "meta": {"rounds": 3},
        "paths": {"direct": {}, "kproxy-compiled": {}, "kproxy-base": {}},
        "workloads": {
            "latency": {
                "metrics": [{"key": "p50_ms", "label": "p50", "unit": "ms"}],
                "runs": [
                    run("kproxy-compiled", 0, 0.3, 9.0),
                    run("kproxy-base", 0, 0.3, 10.0),
                    run("kproxy-compiled", 1, 0.6, 18.0),
                    run("kproxy-base", 1, 0.5, 20.0),
                    run("kproxy-compiled", 2, 0.3, 11.0),
                    run("kproxy-base", 2, 0.3, 10.0),
                ],
            }
        },
    }
    title, figure, cpu = paired_lines(results, "latency", "kproxy-compiled", "kproxy-base")
    assert title == "kproxy-compiled against kproxy-base, round by round:"
    assert figure == "  p50: 1.000 [1.000-1.200]"
    assert cpu == "  CPU per message: 0.900 [0.900-1.100], less in 2 of 3 rounds"


class _OneBroker(Upstream):
    """An upstream whose broker is named, never started: what `start_proxy` dials."""

    def direct_bootstrap(self) -> str:
        return "127.0.0.1:9"


@pytest.mark.parametrize(
    ("flags", "loop", "tree", "compiled"),
    [
        ([], "uvloop", "kproxy-uvloop", "kproxy-compiled"),
        (["--standard-loop"], "asyncio", "kproxy-asyncio", "kproxy-compiled-asyncio"),
    ],
)
def test_the_tree_and_the_baseline_run_on_the_loop_asked_for(
    flags: list[str],
    loop: str,
    tree: str,
    compiled: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["latency", "--baseline", "HEAD", "--compiled", *flags])
    paths, asked = ab_paths(args)
    assert asked == loop
    assert paths == ["direct", "haproxy", tree, compiled, "kproxy-base"]

    started: list[tuple[str, str]] = []
    configs: dict[str, dict[str, object]] = {}

    class StartedPeer:
        def __init__(self, name: str, loop: str, *_: object, **__: object) -> None:
            started.append((name, loop))
            self.config: dict[str, object] = {}
            configs[name] = self.config

        def start(self) -> StartedPeer:
            return self

    monkeypatch.setattr(bench.upstreams, "KproxyPeer", StartedPeer)
    upstream = _OneBroker(tmp_path)
    upstream.baseline_source = tmp_path  # what the harness sets from Options
    upstream.compiled_source = tmp_path
    upstream.baseline_loop = asked
    upstream.kproxy_config = {"quotas": {"entries": []}}  # bench ab --quota's kind
    for path in paths[2:]:
        upstream.start_proxy(path)
    # Every kproxy of the run on the same loop, the compiled build's too.
    assert started == [(tree, loop), (compiled, loop), ("kproxy-base", loop)]
    # The tree's builds take the added sections; the baseline runs as it was.
    assert [name for name, config in configs.items() if "quotas" in config] == [tree, compiled]


def test_the_code_the_targets_were_set_on_runs_as_a_baseline_on_uvloop_only(
    tmp_path: Path,
) -> None:
    """`--baseline 852bfb0`: the harness leaves out the one key that code does not know,
    and that code's own `kproxy check-config` takes the rest. The standard loop is refused
    before anything starts: that code picks uvloop itself whenever it is installed."""
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{FIRST_WAVE}^{{commit}}"],
                           capture_output=True, check=False)  # fmt: skip
    if known.returncode != 0:
        pytest.skip(f"this clone holds no {FIRST_WAVE} (a shallow clone): nothing to check out")
    upstream = ["127.0.0.1:9092"]
    with checkout(FIRST_WAVE) as source:
        assert source is not None
        on_uvloop = bench.kproxy_peer.KproxyPeer(
            "kproxy-base", "uvloop", upstream, tmp_path / "uvloop", source=source
        )
        assert on_uvloop.config_error() is None
        written = yaml.safe_load(on_uvloop.write_config().read_text())
        assert "runtime" not in written and "cluster" in written
        on_asyncio = bench.kproxy_peer.KproxyPeer(
            "kproxy-base", "asyncio", upstream, tmp_path / "asyncio", source=source
        )
        with pytest.raises(RuntimeError, match="can only run on uvloop"):
            on_asyncio.write_config()
    # The tree's own kproxy is told its loop.
    here = bench.kproxy_peer.KproxyPeer("kproxy", "asyncio", upstream, tmp_path / "here")
    assert yaml.safe_load(here.write_config().read_text())["runtime"] == {"event_loop": "asyncio"}
    assert here.config_error() is None
