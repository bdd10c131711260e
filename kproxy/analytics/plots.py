"""The report's PNG plots, drawn with matplotlib's object API on the Agg canvas.

`matplotlib.figure.Figure` is used directly, never pyplot: no global figure state, no
GUI backend is ever picked (a headless server or a Spark driver has no display), and
figures are freed when they go out of scope.

Each function takes the collected rows of an `Analysis` and returns a Figure, or None
when there is nothing to draw (the report then says so in words).
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from kproxy.analytics.model import Analysis
from kproxy.analytics.plot_style import (
    DPI,
    PATH_COLORS,
    PATH_LABELS,
    RECOVERY_COLORS,
    RECOVERY_LABELS,
    TOP_NODES,
    TOP_ROWS,
    integer_ticks,
    mdates,
    naive_utc,
    new_figure,
    node_text,
    style_axes,
    time_axis,
)

__all__ = ["PLOTS", "render_plots"]


def leader_moves_over_time(a: Analysis) -> Figure | None:
    rows = a.rows("plot_moves_over_time")
    if not rows:
        return None
    by_label: dict[str, dict[datetime.datetime, int]] = defaultdict(dict)
    totals: dict[str, int] = defaultdict(int)
    for r in rows:
        by_label[r["label"]][naive_utc(r["bucket_start"])] = int(r["moves"])
        totals[r["label"]] += int(r["moves"])
    # Biggest topics at the bottom of the stacks, "(other topics)" on top.
    labels = sorted(totals, key=lambda k: (k == "(other topics)", -totals[k], k))
    buckets = sorted({b for series in by_label.values() for b in series})
    xs = [float(mdates.date2num(b)) for b in buckets]
    width = a.bucket_seconds / 86400 * 0.85  # matplotlib dates are in days
    fig = new_figure(4.2)
    ax = fig.add_subplot()
    ax.xaxis_date()
    bottom = [0] * len(buckets)
    for label in labels:
        heights = [by_label[label].get(b, 0) for b in buckets]
        ax.bar(xs, heights, width=width, bottom=bottom, label=label, align="edge")
        bottom = [x + h for x, h in zip(bottom, heights, strict=True)]
    style_axes(ax)
    time_axis(ax)
    integer_ticks(ax.yaxis)
    ax.set_ylabel("leader moves")
    ax.set_title(f"Leader moves over time by topic (UTC, {a.bucket_seconds} s per bar)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9, frameon=False)
    return fig


def leadership_by_broker(a: Analysis) -> Figure | None:
    rows = a.rows("leadership_by_broker")
    if not rows:
        return None
    over_time = a.rows("leadership_by_broker_over_time")
    brokers = [r["broker"] for r in rows]
    fig = new_figure(4.0 + 0.28 * min(len(brokers), 30))
    top, bottom_ax = fig.subplots(2, 1, height_ratios=[1, 1.2])
    names = [str(b) for b in brokers]
    gained = [int(r["gained"]) for r in rows]
    lost = [-int(r["lost"]) for r in rows]
    top.bar(names, gained, color="#1565c0", label="gained leadership")
    top.bar(names, lost, color="#ef6c00", label="lost leadership")
    top.axhline(0, color="#424242", linewidth=0.8)
    style_axes(top)
    top.set_xlabel("broker")
    integer_ticks(top.yaxis)
    top.set_ylabel("moves")
    top.set_title("Leadership gained and lost per broker (all time)")
    top.legend(fontsize=9, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))

    if not over_time:
        bottom_ax.set_visible(False)
        return fig
    # Net gain per broker and bucket: a broker going down in a rolling restart shows as
    # a red cell, taking leadership back as a blue one.
    activity = {r["broker"]: int(r["gained"]) + int(r["lost"]) for r in rows}
    shown = sorted(sorted(activity, key=lambda b: -activity[b])[:30])  # the 30 busiest
    # Every bucket from the first to the last, quiet ones included, so that a cell's
    # width is its time (bucket_seconds keeps the span to MAX_BUCKETS of them).
    starts = sorted({naive_utc(r["bucket_start"]) for r in over_time})
    step = datetime.timedelta(seconds=a.bucket_seconds)
    count = int((starts[-1] - starts[0]) / step) + 1
    buckets = [starts[0] + i * step for i in range(count)]
    col = {b: i for i, b in enumerate(buckets)}
    row = {b: i for i, b in enumerate(shown)}
    grid = [[0.0] * len(buckets) for _ in shown]
    for r in over_time:
        if r["broker"] in row:
            net = int(r["gained"]) - int(r["lost"])
            grid[row[r["broker"]]][col[naive_utc(r["bucket_start"])]] += net
    peak = max((abs(v) for line in grid for v in line), default=1.0) or 1.0
    x_edges = [float(mdates.date2num(b)) for b in [*buckets, buckets[-1] + step]]
    y_edges = [i - 0.5 for i in range(len(shown) + 1)]
    image = bottom_ax.pcolormesh(
        x_edges,
        y_edges,
        grid,
        cmap="RdBu",
        norm=TwoSlopeNorm(vcenter=0.0, vmin=-peak, vmax=peak),
        edgecolors="#eeeeee",
        linewidth=0.3,
    )
    bottom_ax.set_yticks(range(len(shown)), [str(b) for b in shown])
    bottom_ax.invert_yaxis()
    bottom_ax.set_ylabel("broker")
    bottom_ax.xaxis_date()
    time_axis(bottom_ax)
    bottom_ax.set_title(
        f"Net leadership gained per broker over time (UTC, {a.bucket_seconds} s per cell; "
        "blue gained, red lost)"
    )
    bar = fig.colorbar(image, ax=bottom_ax, label="gained - lost", fraction=0.03)
    integer_ticks(bar.ax.yaxis)
    return fig


def _redirect_path_bars(ax: Axes, names: list[str], rows: list[dict[str, Any]]) -> None:
    """One horizontal bar per row, stacked by what the redirect told the client."""
    start = [0] * len(rows)
    for path, color in PATH_COLORS.items():
        widths = [int(r[path]) for r in rows]
        ax.barh(names, widths, left=start, color=color, label=PATH_LABELS[path])
        start = [x + w for x, w in zip(start, widths, strict=True)]


def redirects_by_api(a: Analysis) -> Figure | None:
    rows = a.rows("redirects_by_api")[:TOP_ROWS]
    if not rows:
        return None
    rows = list(reversed(rows))  # largest at the top of a horizontal chart
    fig = new_figure(1.6 + 0.45 * len(rows))
    ax = fig.add_subplot()
    _redirect_path_bars(ax, [r["api"] for r in rows], rows)
    for y, r in enumerate(rows):
        share = 100 * int(r["fast_path"]) / int(r["redirects"])
        ax.text(
            int(r["redirects"]),
            y,
            f"  {int(r['redirects']):,} ({share:.0f}% fast path)",
            va="center",
            fontsize=9,
        )
    ax.set_xlim(0, max(int(r["redirects"]) for r in rows) * 1.3)
    style_axes(ax)
    integer_ticks(ax.xaxis)
    ax.set_xlabel("redirects (NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH)")
    ax.set_title("Redirects by API and by what the response told the client")
    ax.legend(fontsize=9, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    return fig


def redirects_by_route(a: Analysis) -> Figure | None:
    rows = a.rows("redirects_by_route")
    if not rows:
        return None
    from_totals: dict[str, int] = defaultdict(int)
    to_totals: dict[str, int] = defaultdict(int)
    for r in rows:
        from_totals[node_text(r["from_node"], "bootstrap")] += int(r["redirects"])
        to_totals[node_text(r["to_node"], "none")] += int(r["redirects"])

    def order(totals: dict[str, int], special: str) -> list[str]:
        top = sorted(totals, key=lambda k: -totals[k])[:TOP_NODES]
        return sorted(top, key=lambda k: (k == special, int(k) if k.isdigit() else 0, k))

    froms, tos = order(from_totals, "bootstrap"), order(to_totals, "none")
    grid = [[0] * len(tos) for _ in froms]
    for r in rows:
        f, t = node_text(r["from_node"], "bootstrap"), node_text(r["to_node"], "none")
        if f in froms and t in tos:
            grid[froms.index(f)][tos.index(t)] += int(r["redirects"])
    fig = new_figure(1.8 + 0.42 * len(froms))
    ax = fig.add_subplot()
    image = ax.imshow(grid, cmap="Blues", aspect="auto")
    peak = max(max(line) for line in grid) or 1
    for i, line in enumerate(grid):
        for j, v in enumerate(line):
            if v:
                color = "white" if v > peak * 0.55 else "#212121"
                ax.text(j, i, f"{v:,}", ha="center", va="center", fontsize=9, color=color)
    ax.set_xticks(range(len(tos)), [f"to {t}" for t in tos])
    ax.set_yticks(range(len(froms)), [f"from {f}" for f in froms])
    ax.set_title(
        "Redirects from the broker that answered to the leader it named "
        "(bootstrap: kproxy's bootstrap listener; none: no leader named)"
    )
    bar = fig.colorbar(image, ax=ax, label="redirects", fraction=0.03)
    integer_ticks(bar.ax.yaxis)
    return fig


def recovery(a: Analysis) -> Figure | None:
    curve = a.rows("recovery_curve")
    stats = [r for r in a.rows("recovery_percentiles") if r["scope"] in ("all", "path")]
    if not curve or not stats:
        return None
    fig = new_figure(4.3)
    left, right = fig.subplots(1, 2, width_ratios=[1.3, 1])
    paths: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in curve:
        paths[r["path"]].append((float(r["ms"]), 100 * float(r["percentile"])))
    values = [ms for pts in paths.values() for ms, _ in pts]
    positive = [v for v in values if v > 0]
    log = bool(positive) and max(positive) / min(positive) > 20
    for path in sorted(paths):
        pts = sorted(paths[path], key=lambda p: p[1])
        left.plot(
            [ms for ms, _ in pts],
            [p for _, p in pts],
            color=RECOVERY_COLORS.get(path, "#546e7a"),
            linewidth=2,
            label=RECOVERY_LABELS.get(path, path),
        )
    if log:
        left.set_xscale("log")
    style_axes(left)
    left.set_xlabel("recovery time (ms" + (", log scale)" if log else ")"))
    left.set_ylabel("percentile")
    left.set_ylim(0, 100)
    left.set_title("Recovery time distribution by path")
    left.legend(fontsize=9, frameon=False, loc="lower right")

    order = {"all": 0, "with_endpoint": 1, "without_endpoint": 2}
    stats.sort(key=lambda r: order.get(str(r["key"]), 3))
    keys = ["p50", "p90", "p99", "max"]
    width = 0.8 / len(stats)
    for i, r in enumerate(stats):
        xs = [k + (i - (len(stats) - 1) / 2) * width for k in range(len(keys))]
        heights = [float(r[k]) for k in keys]
        label = f"{RECOVERY_LABELS.get(str(r['key']), str(r['key']))} (n={int(r['recoveries']):,})"
        bars = right.bar(
            xs, heights, width=width, color=RECOVERY_COLORS.get(str(r["key"])), label=label
        )
        right.bar_label(bars, labels=[_short_ms(h) for h in heights], fontsize=8, padding=2)
    right.set_xticks(range(len(keys)), keys)
    if log:
        right.set_yscale("log")
    style_axes(right)
    right.set_ylabel("ms")
    right.set_title("Recovery time percentiles")
    right.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3)
    right.margins(y=0.15)
    return fig


def _short_ms(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def latency(a: Analysis) -> Figure | None:
    rows = a.rows("latency_by_api")[:TOP_ROWS]
    if not rows:
        return None
    rows = list(reversed(rows))
    fig = new_figure(1.8 + 0.5 * len(rows))
    axes = fig.subplots(1, 2, sharey=True)
    apis = [f"{r['api']} (n={int(r['samples']):,})" for r in rows]
    shades = {"p50": "#90caf9", "p90": "#1e88e5", "p99": "#0d47a1"}
    values = [float(r[f"{k}_{p}"]) for r in rows for k in ("total", "upstream") for p in shades]
    positive = [v for v in values if v > 0]
    log = bool(positive) and max(positive) / min(positive) > 50
    height = 0.8 / len(shades)
    for ax, kind in zip(axes, ("total", "upstream"), strict=True):
        for i, (p, color) in enumerate(shades.items()):
            ys = [y + (i - 1) * height for y in range(len(rows))]
            ax.barh(
                ys, [float(r[f"{kind}_{p}"]) for r in rows], height=height, color=color, label=p
            )
        ax.set_yticks(range(len(rows)), apis)
        if log:
            ax.set_xscale("log")
        style_axes(ax)
        ax.set_xlabel("ms" + (" (log scale)" if log else ""))
    axes[0].set_title("Total latency (kproxy read request → wrote response)")
    axes[1].set_title("Upstream latency (waiting for the broker)")
    axes[1].legend(fontsize=9, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def most_affected(a: Analysis) -> Figure | None:
    clients = [r for r in a.rows("clients") if r["redirects"]][:10]
    topics = [r for r in a.rows("topics") if r["redirects"] or r["leader_moves"]][:10]
    if not clients and not topics:
        return None
    fig = new_figure(1.8 + 0.36 * max(len(clients), len(topics), 1))
    left, right = fig.subplots(1, 2)
    if clients:
        rows = list(reversed(clients))
        _redirect_path_bars(left, [_clip(r["client_id"] or "(none)") for r in rows], rows)
        left.set_title("Clients with the most redirects")
        left.set_xlabel("redirects")
        style_axes(left)
        integer_ticks(left.xaxis)
    else:
        left.set_visible(False)
    if topics:
        rows = list(reversed(topics))
        names = [_clip(str(r["topic"])) for r in rows]
        ys = list(range(len(rows)))
        right.barh([y + 0.2 for y in ys], [int(r["redirects"]) for r in rows], height=0.4,
                   color="#6a1b9a", label="redirects")  # fmt: skip
        right.barh([y - 0.2 for y in ys], [int(r["leader_moves"]) for r in rows], height=0.4,
                   color="#00838f", label="leader moves")  # fmt: skip
        right.set_yticks(ys, names)
        right.set_title("Topics with the most redirects")
        right.set_xlabel("count")
        style_axes(right)
        integer_ticks(right.xaxis)
    else:
        right.set_visible(False)
    # One legend under both charts: inside either it would cover the longest bars.
    fig.legend(fontsize=9, frameon=False, loc="outside lower center", ncol=5)
    return fig


def _clip(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


PLOTS: dict[str, Callable[[Analysis], Figure | None]] = {
    "leader_moves_over_time": leader_moves_over_time,
    "leadership_by_broker": leadership_by_broker,
    "redirects_by_api": redirects_by_api,
    "redirects_by_route": redirects_by_route,
    "recovery": recovery,
    "latency": latency,
    "most_affected": most_affected,
}


def render_plots(a: Analysis, directory: Path) -> dict[str, str]:
    """Draw every plot that has data into `directory/plots/`; name -> relative path."""
    plots_dir = directory / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    for stale in plots_dir.glob("*.png"):  # of an earlier analysis into the same DIR
        stale.unlink()
    written: dict[str, str] = {}
    for name, draw in PLOTS.items():
        fig = draw(a)
        if fig is None:
            continue
        relative = f"plots/{name}.png"
        fig.savefig(directory / relative, dpi=DPI, facecolor="white")
        written[name] = relative
    return written
