"""The plain Python reading of a fleet's event logs that `bench.analytics_bench` measures
`kproxy analyze` against: one process, `json.loads` on every line, the same figures
computed exactly; and the comparison of the two sets of figures (they must agree)."""

from __future__ import annotations

import gzip
import json
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kproxy.observe.events import EVENT_TYPES, SCHEMA_VERSION

PERCENTILES = (0.5, 0.9, 0.99)


def percentile(values: list[float], p: float) -> float | None:
    """Exact, linear interpolation between the two nearest ranks (as the job's)."""
    if not values:
        return None
    rank = (len(values) - 1) * p
    lo = math.floor(rank)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (rank - lo)


def _stats(values: array[float]) -> dict[str, Any]:
    ordered = sorted(values)
    out: dict[str, Any] = {"n": len(ordered)}
    for p in PERCENTILES:
        out[f"p{round(p * 100)}"] = percentile(ordered, p)
    return out


def _lines(path: Path) -> Iterator[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    f: IO[str]
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        yield from f


def _input_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


def baseline(root: Path) -> dict[str, Any]:
    """One process, one pass over every line: the figures the job's report shows."""
    types: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    moves: set[tuple[Any, ...]] = set()
    unmatched_moves = 0
    redirects: Counter[str] = Counter()
    routes: Counter[tuple[Any, Any]] = Counter()
    recovery: dict[str, array[float]] = defaultdict(lambda: array("d"))
    per_client: dict[Any, array[float]] = defaultdict(lambda: array("d"))
    latency: dict[tuple[str, str], array[float]] = defaultdict(lambda: array("d"))

    def tally(kind: str, e: dict[str, Any]) -> None:
        nonlocal unmatched_moves
        if kind == "request_sample":
            total, upstream = float(e["total_ms"]), float(e["upstream_ms"])
            latency[(e["api"], "total")].append(total)
            latency[(e["api"], "upstream")].append(upstream)
        elif kind == "redirect":
            to = e["to_node"]
            fast = e["with_endpoint"]
            redirects["no_leader" if to is None else "fast_path" if fast else "leader_only"] += 1
            routes[(e["from_node"], to)] += 1
        elif kind == "recovery":
            ms = float(e["ms"])
            recovery["all"].append(ms)
            recovery["with_endpoint" if e["with_endpoint"] else "without_endpoint"].append(ms)
            per_client[e["client_id"]].append(ms)
        elif kind == "leader_change":
            if e["new_epoch"] is None:
                unmatched_moves += 1
            else:
                topic = e["topic"] if e["topic"] is not None else e["topic_id"]
                moves.add((topic, e["partition"], e["new_epoch"], e["new_leader"]))

    loads = json.loads
    files = _input_files(root)
    for path in files:
        for line in _lines(path):
            if not line.strip():
                continue
            try:
                e = loads(line)
            except ValueError:
                rejected["malformed"] += 1
                continue
            if not isinstance(e, dict):
                rejected["malformed"] += 1
                continue
            schema, kind = e.get("schema"), e.get("type")
            if isinstance(schema, int) and schema > SCHEMA_VERSION:
                rejected["newer_schema"] += 1
                continue
            if (
                schema != SCHEMA_VERSION
                or not isinstance(kind, str)
                or "ts" not in e
                or "proxy" not in e
            ):
                rejected["malformed"] += 1
                continue
            if kind not in EVENT_TYPES:
                rejected["unknown_type"] += 1
                continue
            try:
                tally(kind, e)
            except (KeyError, TypeError, ValueError):  # a field missing or of a wrong type
                rejected["malformed"] += 1
                continue
            types[kind] += 1
    apis = sorted({api for api, _ in latency})
    return {
        "files": len(files),
        "events": sum(types.values()),
        "event_counts": dict(sorted(types.items())),
        "rejected": {k: rejected[k] for k in ("malformed", "unknown_type", "newer_schema")},
        "leader_moves": len(moves) + unmatched_moves,
        "redirects": {
            "total": sum(redirects.values()),
            **{k: redirects[k] for k in ("fast_path", "leader_only", "no_leader")},
        },
        "redirect_routes": len(routes),
        "recovery": {k: _stats(v) for k, v in sorted(recovery.items())},
        "recovery_client_p99": {str(c): _stats(v)["p99"] for c, v in per_client.items()},
        "latency": {
            api: {kind: _stats(latency[(api, kind)]) for kind in ("total", "upstream")}
            for api in apis
        },
    }


# -- comparing the job's figures with the baseline's ---------------------------------------------


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def compare(summary: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Differences between the job's summary.json and the baseline's figures."""
    pairs: list[tuple[str, Any, Any]] = [
        ("events", summary["events"], base["events"]),
        ("leader moves", summary["leader_changes"]["moves"], base["leader_moves"]),
    ]
    for kind in ("malformed", "unknown_type", "newer_schema"):
        pairs.append((f"rejected {kind}", summary["rejected"][kind], base["rejected"][kind]))
    for t, n in base["event_counts"].items():
        pairs.append((f"{t} events", summary["event_counts"].get(t), n))
    for k in ("total", "fast_path", "leader_only", "no_leader"):
        pairs.append((f"redirects {k}", summary["redirects"][k], base["redirects"][k]))
    for key in ("all", "with_endpoint", "without_endpoint"):
        job_stats = summary["recovery"].get(key) or {}
        base_stats = base["recovery"].get(key) or {}
        pairs.append((f"recovery {key} n", job_stats.get("recoveries"), base_stats.get("n")))
        for p in ("p50", "p90", "p99"):
            pairs.append((f"recovery {key} {p}", job_stats.get(p), base_stats.get(p)))
    for api, kinds in base["latency"].items():
        job_api = summary["latency"].get(api, {})
        pairs.append((f"latency {api} samples", job_api.get("samples"), kinds["total"]["n"]))
        for kind in ("total", "upstream"):
            for p in ("p50", "p90", "p99"):
                job_value = job_api.get(f"{kind}_{p}")
                pairs.append((f"latency {api} {kind} {p}", job_value, kinds[kind][p]))
    return [f"{name}: job {a!r}, baseline {b!r}" for name, a, b in pairs if not _close(a, b)]
