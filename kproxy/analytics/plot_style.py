"""The look shared by the report's plots: figure size, axes style, time and count axes."""

from __future__ import annotations

import datetime
from typing import Any

from matplotlib import dates as _mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

# matplotlib.dates carries no annotations (mypy strict would refuse its calls).
mdates: Any = _mdates

DPI = 100
WIDTH = 11.0  # inches: 1100 px, the report's column width
FAST, LEADER_ONLY, NO_LEADER = "#2e7d32", "#f9a825", "#c62828"
PATH_COLORS = {"fast_path": FAST, "leader_only": LEADER_ONLY, "no_leader": NO_LEADER}
PATH_LABELS = {
    "fast_path": "new leader + endpoint (KIP-951 fast path)",
    "leader_only": "new leader, no endpoint",
    "no_leader": "no leader named (metadata refresh)",
}
RECOVERY_COLORS = {"with_endpoint": FAST, "without_endpoint": NO_LEADER, "all": "#546e7a"}
RECOVERY_LABELS = {
    "with_endpoint": "with NodeEndpoints",
    "without_endpoint": "without NodeEndpoints",
    "all": "all",
}
TOP_ROWS = 12  # bars per chart
TOP_NODES = 15  # rows/columns of the route matrix


def new_figure(height: float) -> Figure:
    fig = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    fig.set_facecolor("white")
    return fig


def style_axes(ax: Axes) -> None:
    ax.grid(True, axis="both", color="#e0e0e0", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def integer_ticks(axis: Any) -> None:
    """Whole-number ticks on an axis of counts (no 0.25 of a redirect)."""
    axis.set_major_locator(MaxNLocator(integer=True))


def node_text(value: Any, none: str) -> str:
    return none if value is None else str(value)


def naive_utc(ts: datetime.datetime) -> datetime.datetime:
    # matplotlib's date axis is UTC here (the session time zone); drop tzinfo if any.
    return ts.replace(tzinfo=None)


def time_axis(ax: Axes) -> None:
    # minticks=3: with the default 5, a span of 4.5 to 5 minutes (or hours) fits no
    # interval of the finer unit and matplotlib warns and guesses.
    locator = mdates.AutoDateLocator(minticks=3, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
