"""Synthetic kproxy event logs of a fleet, for `kproxy analyze` at scale:

    python -m bench.analytics_gen --events 1000000 --out DIR [--seed 1]
        [--proxies 40] [--clients 600] [--topics 150] [--brokers 12] [--hours 6]

Writes `DIR/<host>/events-<stamp>-<proxy>-<seq>.jsonl` (docs/events.md), rotated as
kproxy rotates by default: a new file when one is an hour old or would pass 64 MiB
(here: `--file-lines` lines), so several files per proxy; each proxy's lines in time
order, exactly `--events` lines in all. The same seed gives the same bytes.

The mix follows what a fleet's logs hold: mostly `request_sample`, then connections,
and around each leader move of the cluster the `leader_change` lines of the proxies
that saw it (a move is seen by one to four proxies), the redirects of their clients
(KIP-951 fast path for most Produce/Fetch, a leader without endpoint or no leader for
the rest) and the recoveries that follow (fast with NodeEndpoints, slower without).
About one line in 10,000 is a reject (malformed, unknown type, newer schema), so the
counting of rejects is measured too.

Plain Python, lines formatted from templates (no json.dumps per line): about 2-3 s per
million lines on one core.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FleetSpec", "generate", "main"]

START = datetime.datetime(2026, 11, 22, 0, 0, tzinfo=datetime.UTC)
APIS = ("Produce", "Fetch")
SAMPLE_APIS = (
    ("Produce", 10, 0.44),
    ("Fetch", 16, 0.44),
    ("Metadata", 12, 0.05),
    ("ListOffsets", 8, 0.02),
    ("OffsetCommit", 9, 0.02),
    ("Heartbeat", 4, 0.03),
)
BAD_LINES = (
    '{"schema":1,"type":"redirect","ts":"2026-11-22T00:00:01.000000Z"',  # cut short
    "not json",
    '{"schema":1,"type":"quota_throttle","ts":"2026-11-22T00:00:01.000000Z","proxy":"x"}',
    '{"schema":2,"type":"redirect","ts":"2026-11-22T00:00:01.000000Z","proxy":"x"}',
)


@dataclass(frozen=True)
class FleetSpec:
    events: int
    seed: int = 1
    proxies: int = 40
    clients: int = 600
    topics: int = 150
    brokers: int = 12
    hours: float = 6.0
    rotate_seconds: int = 3600
    file_lines: int = 350_000  # about 64 MiB of these lines
    # Shares of all lines; request samples take what is left.
    leader_change_share: float = 0.004
    connection_share: float = 0.02
    bad_share: float = 0.0001


class _Clock:
    """Microseconds since START -> kproxy's timestamp text (the second's prefix cached)."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""
        self._days: dict[int, str] = {}

    def __call__(self, us: int) -> str:
        second, micros = divmod(us, 1_000_000)
        if second != self._second:
            self._second = second
            day, rest = divmod(second, 86400)
            date = self._days.get(day)
            if date is None:
                date = self._days[day] = f"{START + datetime.timedelta(days=day):%Y-%m-%d}"
            hours, rest = divmod(rest, 3600)
            self._prefix = f"{date}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
        return f"{self._prefix}.{micros:06d}Z"


def _j(value: str | None) -> str:
    return "null" if value is None else json.dumps(value)


def _n(value: int | None) -> str:
    return "null" if value is None else str(value)


@dataclass
class _Move:
    us: int
    topic: int
    partition: int
    old: int
    new: int
    old_epoch: int
    new_epoch: int


def _cluster_moves(spec: FleetSpec, rng: random.Random, count: int, span_us: int) -> list[_Move]:
    """Leader moves of the cluster in time order: bursts (a broker restarting moves many
    partitions within seconds) and single elections in between."""
    parts = [(t, p) for t in range(spec.topics) for p in range(1 + t % 12)]
    leader = {tp: rng.randint(1, spec.brokers) for tp in parts}
    epoch = dict.fromkeys(parts, 0)
    moves: list[_Move] = []
    us = 0
    step = span_us // max(count, 1)
    while len(moves) < count:
        us += int(rng.expovariate(1.0) * step)
        if rng.random() < 0.3:  # a broker goes away: its partitions move in a burst
            gone = rng.randint(1, spec.brokers)
            burst = [tp for tp in parts if leader[tp] == gone][: count - len(moves)]
        else:
            burst = [rng.choice(parts)]
        for tp in burst:
            new = rng.randint(1, spec.brokers - 1)
            new = new + 1 if new >= leader[tp] else new  # another broker
            moves.append(
                _Move(us + rng.randrange(2_000_000), *tp, leader[tp], new, epoch[tp], epoch[tp] + 1)
            )
            leader[tp], epoch[tp] = new, epoch[tp] + 1
    moves.sort(key=lambda m: m.us)
    return moves


# An event before it is a line: (time in µs, type, the fields' JSON text). The time is
# formatted once the proxy's events are sorted, so that one second's prefix serves all
# of that second's lines. A reject has type None and its whole line as the text.
_Event = tuple[int, str | None, str]


def _proxy_name(index: int) -> str:
    return f"app-{index:03d}-{4000 + index}"


def _proxy_events(
    spec: FleetSpec,
    index: int,
    quota: int,
    sightings: list[_Move],
    topics: list[tuple[str, str]],
    span_us: int,
) -> Iterator[_Event]:
    """The events of one proxy, not yet sorted; exactly `quota` of them."""
    rng = random.Random(spec.seed * 1_000_003 + index)
    # Each proxy serves a slice of the clients (a client id may sit behind several),
    # kept as JSON text; on some proxies a client sends no client.id.
    per_proxy = max(1, spec.clients // spec.proxies * 2)
    clients = [f'"svc-{(index * 7 + k) % spec.clients:04d}"' for k in range(per_proxy)]
    if index % 4 == 0:
        clients.append("null")
    left = quota

    for b in range(1, spec.brokers + 1):
        if left <= 0:
            return
        body = f'"node_id":{b},"upstream":"10.1.0.{b}:9092","advertised":"broker-{b}.kafka:9092"'
        yield (rng.randrange(1_000_000), "node_discovered", body)
        left -= 1

    # Leader changes, redirects and recoveries around the moves this proxy saw.
    for m in sightings:
        if left <= 0:
            return
        name, tid = topics[m.topic]
        seen = m.us + rng.randrange(500_000)
        src = rng.choice(("Metadata", "Metadata", "Produce", "Fetch"))
        body = (
            f'"topic":"{name}","topic_id":"{tid}","partition":{m.partition},'
            f'"old_leader":{m.old},"new_leader":{m.new},"old_epoch":{m.old_epoch},'
            f'"new_epoch":{m.new_epoch},"source_api":"{src}"'
        )
        yield (seen, "leader_change", body)
        left -= 1
        for _ in range(rng.choice((0, 1, 2, 2, 3, 4, 6))):
            if left <= 0:
                return
            api = rng.choice(APIS) if rng.random() < 0.95 else "ListOffsets"
            client = rng.choice(clients)
            to = m.new if rng.random() < 0.85 else None
            fast = to is not None and api != "ListOffsets" and rng.random() < 0.8
            frm = m.old if rng.random() < 0.98 else None
            # Fetch v13+ names topics by id only: some lines carry no name.
            topic_name = None if api == "Fetch" and rng.random() < 0.2 else name
            r_us = seen - rng.randrange(300_000)
            body = (
                f'"api":"{api}","client_id":{client},"topic":{_j(topic_name)},'
                f'"topic_id":"{tid}","partition":{m.partition},'
                f'"error_code":{6 if rng.random() < 0.9 else 74},"from_node":{_n(frm)},'
                f'"to_node":{_n(to)},"with_endpoint":{"true" if fast else "false"}'
            )
            yield (r_us, "redirect", body)
            left -= 1
            if left <= 0 or rng.random() < 0.1:  # the client went away: no recovery
                continue
            ms = (
                rng.lognormvariate(math.log(6.0), 0.6)
                if fast
                else rng.lognormvariate(math.log(180.0), 0.8)
            )
            ms = round(min(ms, 299_000.0), 3)
            body = (
                f'"topic":{_j(topic_name)},"topic_id":"{tid}","partition":{m.partition},'
                f'"client_id":{client},"ms":{ms},"with_endpoint":{"true" if fast else "false"}'
            )
            yield (r_us + int(ms * 1000), "recovery", body)
            left -= 1

    # Connections: open/close pairs, a close with a cause.
    causes = ("client_closed", "client_closed", "client_reset", "upstream_closed", "shutdown")
    for _ in range(int(quota * spec.connection_share / 2)):
        if left < 2:
            break
        listener = "bootstrap" if rng.random() < 0.3 else f"node-{rng.randint(1, spec.brokers)}"
        opened = rng.randrange(span_us)
        yield (opened, "connection", f'"action":"open","listener":"{listener}","cause":null')
        closed = min(span_us, opened + rng.randrange(600_000_000))
        body = f'"action":"close","listener":"{listener}","cause":"{rng.choice(causes)}"'
        yield (closed, "connection", body)
        left -= 2

    # Rejects, then request samples for the rest.
    bad = min(left, math.floor(quota * spec.bad_share + 0.5))
    for _ in range(bad):
        yield rng.randrange(span_us), None, rng.choice(BAD_LINES)
    left -= bad
    apis = [a for a, _, _ in SAMPLE_APIS]
    versions = {a: v for a, v, _ in SAMPLE_APIS}
    weights = [w for _, _, w in SAMPLE_APIS]
    lognorm = rng.lognormvariate
    mu = {a: math.log(20.0 if a == "Fetch" else 2.0) for a in apis}  # Fetch waits for data
    prefix = {a: f'"api":"{a}","version":{versions[a]},"client_id":' for a in apis}
    rand, n_clients = rng.random, len(clients)
    for api in rng.choices(apis, weights, k=left):
        total = round(lognorm(mu[api], 0.7), 3)
        upstream = round(total * (0.8 + 0.19 * rand()), 3)
        client = clients[int(rand() * n_clients)]
        body = f'{prefix[api]}{client},"total_ms":{total},"upstream_ms":{upstream}'
        yield int(rand() * span_us), "request_sample", body


def _rotated(events: list[_Event], spec: FleetSpec) -> Iterator[list[_Event]]:
    """A proxy's sorted events cut into files: by age (from a file's first event) and
    by length."""
    age_us = spec.rotate_seconds * 1_000_000
    start = 0
    for i, (us, _, _) in enumerate(events):
        if i - start >= spec.file_lines or us - events[start][0] >= age_us:
            yield events[start:i]
            start = i
    if start < len(events):
        yield events[start:]


def generate(spec: FleetSpec, out: Path) -> dict[str, int]:
    """Write the fleet's logs under `out`; returns counts (lines, files, bytes)."""
    rng = random.Random(spec.seed)
    span_us = int(spec.hours * 3600 * 1_000_000)
    topics = [
        (f"topic-{t:04d}", str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        for t in range(spec.topics)
    ]
    # One leader_change line per (move, proxy that saw it): ~2.5 sightings per move.
    moves = _cluster_moves(
        spec, rng, max(1, int(spec.events * spec.leader_change_share / 2.5)), span_us
    )
    sightings: list[list[_Move]] = [[] for _ in range(spec.proxies)]
    for m in moves:
        for p in rng.sample(range(spec.proxies), min(spec.proxies, rng.randint(1, 4))):
            sightings[p].append(m)
    quotas = [spec.events // spec.proxies] * spec.proxies
    for i in range(spec.events % spec.proxies):
        quotas[i] += 1
    out.mkdir(parents=True, exist_ok=True)
    files = lines = size = 0
    for index, quota in enumerate(quotas):
        events = sorted(
            _proxy_events(spec, index, quota, sightings[index], topics, span_us),
            key=lambda e: e[0],
        )
        host = out / f"host-{index:03d}"
        host.mkdir(exist_ok=True)
        proxy = _proxy_name(index)
        head = f'"proxy":"{proxy}",'
        clock = _Clock()
        for seq, chunk in enumerate(_rotated(events, spec)):
            opened = START + datetime.timedelta(microseconds=chunk[0][0])
            name = f"events-{opened:%Y%m%dT%H%M%S}-{proxy}-{seq:06d}.jsonl"
            text = [
                body
                if kind is None
                else f'{{"schema":1,"type":"{kind}","ts":"{clock(us)}",{head}{body}}}'
                for us, kind, body in chunk
            ]
            data = ("\n".join(text) + "\n").encode()
            (host / name).write_bytes(data)
            files += 1
            lines += len(chunk)
            size += len(data)
    return {"lines": lines, "files": files, "bytes": size}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, required=True, help="lines to write in all")
    p.add_argument("--out", type=Path, required=True, help="directory (created)")
    p.add_argument("--seed", type=int, default=FleetSpec.seed)
    p.add_argument("--proxies", type=int, default=FleetSpec.proxies)
    p.add_argument("--clients", type=int, default=FleetSpec.clients)
    p.add_argument("--topics", type=int, default=FleetSpec.topics)
    p.add_argument("--brokers", type=int, default=FleetSpec.brokers)
    p.add_argument("--hours", type=float, default=FleetSpec.hours, help="time the logs span")
    p.add_argument("--file-lines", type=int, default=FleetSpec.file_lines)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.brokers < 2 or args.proxies < 1 or args.events < 1 or args.topics < 1:
        print("need --brokers >= 2, --proxies, --events and --topics >= 1", file=sys.stderr)
        return 2
    spec = FleetSpec(
        events=args.events,
        seed=args.seed,
        proxies=args.proxies,
        clients=args.clients,
        topics=args.topics,
        brokers=args.brokers,
        hours=args.hours,
        file_lines=args.file_lines,
    )
    started = time.monotonic()
    counts = generate(spec, args.out)
    took = time.monotonic() - started
    print(
        f"analytics_gen: {counts['lines']:,} lines in {counts['files']} files, "
        f"{counts['bytes'] / 1e6:,.1f} MB, {took:.1f} s -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
