"""The plot beside RESULTS.md: each path's ratio to direct, median with its min-max
spread, throughput on the left and p99 latency on the right."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.results_file import paths_in, workload_summary

# The reference lines: the throughput and p99 targets (bench/targets.py).
THROUGHPUT_LINE = 0.95
LATENCY_LINE = 1.3


def plot(results: dict[str, Any], png: Path) -> bool:
    """Bars of each path's ratio to direct (median, min-max as error bars): throughput
    on the left, p99 latency on the right. False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    paths = [p for p in paths_in(results) if p != "direct"]
    panels = [
        ("Throughput / direct (higher is better)", "msg_per_s",
         [n for n, w in results["workloads"].items()
          if w.get("target") == "throughput" or w.get("kind") in ("churn", "connections")],
         THROUGHPUT_LINE),
        ("p99 latency / direct (lower is better)", "p99_ms",
         [n for n, w in results["workloads"].items() if w.get("kind") in ("latency", "churn")],
         LATENCY_LINE),
    ]  # fmt: skip
    fig, axes = plt.subplots(
        1, 2, figsize=(15, 5.5), gridspec_kw={"width_ratios": [4, 1]}, squeeze=False
    )
    width = 0.8 / max(1, len(paths))
    for ax, (title, key, names, line) in zip(axes[0], panels, strict=True):
        for i, path in enumerate(paths):
            xs, ys, lo, hi = [], [], [], []
            for j, name in enumerate(names):
                ratio = workload_summary(results, name)[path][key]["ratio"]
                if ratio["n"]:
                    xs.append(j + (i - (len(paths) - 1) / 2) * width)
                    ys.append(ratio["median"])
                    lo.append(ratio["median"] - ratio["min"])
                    hi.append(ratio["max"] - ratio["median"])
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=path)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(line, color="red", linestyle="--", linewidth=0.8)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
    axes[0][0].legend(fontsize=8, ncol=3)
    machine = results.get("machine", {})
    fig.suptitle(
        f"kproxy benchmark: ratio to direct, median and min-max of "
        f"{results.get('meta', {}).get('rounds', '?')} rounds "
        f"({machine.get('cores')} cores, {machine.get('cpu_model')})",
        fontsize=10,
    )
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True
