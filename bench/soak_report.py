"""The soak's record as a section of bench/RESULTS.md, and the slope it reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.formats import fmt_num

MARKER = "<!-- soak -->"
END_MARKER = "<!-- /soak -->"


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of ``(seconds, value)`` points, per hour; None for fewer
    than two distinct times."""
    n = len(points)
    if n < 2:
        return None
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 3600.0


def _ms(summary: dict[str, Any], key: str) -> str:
    return fmt_num(summary.get(key))


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def render_section(result: dict[str, Any]) -> str:
    """The "Soak" section of bench/RESULTS.md for ``result`` (`bench.soak.assemble`):
    what ran, a row per window, the ledger and the slopes, between its markers."""
    s = result["settings"]
    lines = [
        MARKER,
        "## Soak",
        "",
        f"Written by `{result['command']}` ({result.get('date', '?')}, kproxy "
        f"{result.get('revision', '?')}, {result['cpus']} CPUs; raw figures in "
        "`bench/soak_results.json`). Three Apache Kafka nodes (KRaft, combined mode, "
        f"heap {s['heap']}); a topic of {s['partitions']} partitions, replication 3, "
        "`min.insync.replicas` 2; kproxy with its defaults. Through kproxy, one idempotent "
        f"producer (acks=all) sends {fmt_num(s['rate'])} messages of {s['size']} B a "
        "second on a fixed schedule and a consumer group reads them. Every "
        f"{fmt_num(s['chaos_every'])} s, in turn: one partition's leader moved "
        "(reassignment, preferred election), a broker restarted (SIGTERM), a broker "
        "killed (SIGKILL) and started again; none in the first and the last period. "
        "*produce*: from when a message was due to its acknowledgement (coordinated "
        "omission avoided); *end to end*: from when it was due to when it was read. "
        "RSS and descriptors: kproxy's, at the end of the window.",
        "",
        "| minutes | disturbances | produce p50 (ms) | p99 | p99.9 | max | end to end p99 (ms) "
        "| p99.9 | acknowledged | kproxy RSS (MB) | descriptors |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    window_min = s["window"] / 60
    for w in result["windows"]:
        produce, e2e = w["produce_ms"], w["end_to_end_ms"]
        start = w["window"] * window_min
        end = min(start + window_min, s["seconds"] / 60)
        kinds = ", ".join(f"{w['chaos'].count(k)} {k}" for k in dict.fromkeys(w["chaos"]))
        lines.append(
            f"| {start:.0f}-{end:.0f} | {kinds or '-'} | {_ms(produce, 'p50')} "
            f"| {_ms(produce, 'p99')} | {_ms(produce, 'p999')} | {_ms(produce, 'max')} "
            f"| {_ms(e2e, 'p99')} | {_ms(e2e, 'p999')} | {fmt_num(produce['n'])} "
            f"| {w['rss_mb']:.1f} | {w['fds']} |"
        )
    lines.append("")
    ledger = result["ledger"]
    if ledger is None:
        lines.append(f"The clients gave no ledger: {result['client_errors']}.")
    else:
        lines.append(
            f"Ledger: {ledger['acknowledged']:,} records acknowledged, **{ledger['lost']:,} "
            f"lost** (acknowledged, never read), **{ledger['duplicated']:,} in the log "
            f"twice**; {ledger['failed']:,} deliveries failed; the consumer read "
            f"{ledger['reread']:,} records again at offsets it had read (a rebalance or a "
            "coordinator move resumes it from its last commit; not duplicates in the log)."
        )
    samples, slopes = result["samples"], result["slopes"]
    failed = [c for c in result["chaos"] if c["error"]]
    lines += [
        "",
        f"Slopes after the first window (least squares): kproxy RSS "
        f"{_signed(slopes['rss_mb_per_hour'])} MB an hour ({samples[0]['rss_mb']:.1f} MB at "
        f"the start, {max(x['rss_mb'] for x in samples):.1f} at most, "
        f"{samples[-1]['rss_mb']:.1f} at the end); descriptors "
        f"{_signed(slopes['fds_per_hour'])} an hour ({samples[0]['fds']} at the start, "
        f"{max(x['fds'] for x in samples)} at most, {samples[-1]['fds']} at the end). "
        f"kproxy's CPU over the run: {result['kproxy_cpu_s']:.0f} s "
        f"({result['kproxy_cpu_s'] / max(samples[-1]['t'], 1) * 1000:.0f} millicores on "
        f"average). {len(result['chaos'])} disturbances, {len(failed)} of them failed"
        + (f" (first: {failed[0]['error']})." if failed else "."),
        END_MARKER,
    ]
    return "\n".join(lines) + "\n"
