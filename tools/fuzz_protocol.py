"""Fuzz kproxy's protocol core: only ProtocolError may escape, and nothing may hang.

    python tools/fuzz_protocol.py --cases 10000000                # atheris when installed
    python tools/fuzz_protocol.py --engine mutate --cases 1000000 --seed 7

Every case is a byte string fed to FrameReader (in random splits, with small and
large frame limits), parse_request_header, produce_acks, parse_response_header, walk (the seed's
plan and one of every plan in turn), rewrite (random hosts, ports and unmappable node
ids), the Produce and Fetch response scans, a streamed Fetch response's skim and
clamp_api_versions. Anything but a ProtocolError is a bug. So is a rewrite of a frame
that walked whose result does not walk again with the new addresses, and a response a
scan or the skim lets pass unwalked in which the walker finds something kproxy acts on
(tools/fuzz_skips.py).

Seeds: the golden vectors (tests/golden/*.hex), random kio-encoded messages of every
endpoint-bearing (api, version) when kio and hypothesis are installed, and a few
ApiVersions responses. Engines:

* ``atheris`` (coverage-guided libFuzzer): the input is a 2-byte plan selector followed
  by a frame; the seeds are written to a corpus directory first.
* ``mutate``: a seeded loop of bit flips, interesting bytes, truncation, insertion,
  deletion, duplication, length-field corruption, splicing of two seeds, and random
  bytes. tests/property/test_fuzz.py runs this same loop.

A crash prints the input as hex (atheris also writes it to a crash-* file) and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import random
import struct
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kproxy.protocol.api_versions import clamp_api_versions  # noqa: E402
from kproxy.protocol.apis import FETCH  # noqa: E402
from kproxy.protocol.errors import ProtocolError  # noqa: E402
from kproxy.protocol.found import WalkResult  # noqa: E402
from kproxy.protocol.frames import FrameReader, FrameStart  # noqa: E402
from kproxy.protocol.headers import parse_request_header, parse_response_header  # noqa: E402
from kproxy.protocol.requests import produce_acks  # noqa: E402
from kproxy.protocol.rewriter import rewrite  # noqa: E402
from kproxy.protocol.walker import Endpoint, walk  # noqa: E402
from tools.fuzz_seeds import PLAN_KEYS, PlanKey, Seed, all_seeds  # noqa: E402
from tools.fuzz_skips import check_scan, check_skim  # noqa: E402

# --------------------------------------------------------------------------- mutation

_INTERESTING_INTS = (0, 1, -1, -2, 2, 0x7F, 0x80, 0xFF, 0x7FFF, -0x8000, 0xFFFF, 2**31 - 1)
_INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE)

_HOSTS = ("", "h", "kproxy.example", "é" * 40, "x" * 300, "\x00\uffff")


def mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """One to four random mutations of `data` (`other` is a second seed for splicing)."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        n = len(buf)
        if op == 0 and n:  # bit flip
            i = rng.randrange(n)
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # interesting byte
            buf[rng.randrange(n)] = rng.choice(_INTERESTING_BYTES)
        elif op == 2 and n:  # truncate
            del buf[rng.randrange(n) :]
        elif op == 3:  # insert random bytes
            i = rng.randint(0, n)
            buf[i:i] = rng.randbytes(rng.randint(1, 16))
        elif op == 4 and n:  # delete a range
            i = rng.randrange(n)
            del buf[i : i + rng.randint(1, 16)]
        elif op == 5 and n:  # duplicate a range
            i = rng.randrange(n)
            j = min(n, i + rng.randint(1, 32))
            buf[j:j] = buf[i:j]
        elif op == 6 and n >= 1:  # corrupt a length/count field: int16, int32 or varint
            i = rng.randrange(n)
            value = rng.choice(_INTERESTING_INTS)
            width = rng.choice((1, 2, 4))
            if width == 1:
                buf[i] = value & 0xFF
            else:
                raw = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")
                buf[i : i + width] = raw
        elif op == 7 and other:  # splice with another seed
            i = rng.randint(0, n)
            j = rng.randrange(len(other))
            buf[i:] = other[j:]
        elif op == 8 and n >= 4:  # fix the frame size to the (new) length, sometimes off by one
            size = n - 4 + rng.choice((0, 0, 0, 1, -1))
            buf[0:4] = struct.pack(">i", size)
    return bytes(buf)


# --------------------------------------------------------------------------- harness


def _splits(rng: random.Random, data: bytes) -> Iterator[bytes]:
    pos = 0
    while pos < len(data):
        step = rng.choice((1, 2, 3, 7, 64, len(data)))
        yield data[pos : pos + step]
        pos += step


def _mapping(rng: random.Random) -> Callable[[Endpoint], tuple[str, int] | None]:
    drop = rng.random() < 0.3
    host = rng.choice(_HOSTS)

    def mapping(ep: Endpoint) -> tuple[str, int] | None:
        if drop and (ep.node_id or 0) % 2 == 0:
            return None
        port = (ep.port + 1) % 0x10000 if ep.port_width == 2 else ep.port ^ 0x5A5A
        return host, port

    return mapping


def _walk_and_rewrite(
    frame: memoryview, offset: int, key: PlanKey, rng: random.Random
) -> WalkResult | None:
    """The frame's walk (None: refused), after its rewrite was checked."""
    api_key, is_request, version = key
    try:
        found = walk(frame, offset, api_key, version, is_request)
    except ProtocolError:
        return None
    assert offset <= found.end <= len(frame), (found.end, len(frame))
    mapping = _mapping(rng)
    result = rewrite(frame, found.endpoints, mapping)
    out = b"".join(bytes(c) for c in result.chunks)
    assert len(out) == result.size + 4 == struct.unpack_from(">i", out)[0] + 4
    # The rewritten frame must walk, end where the original ended (moved by the size
    # change) and carry the new addresses only.
    new = memoryview(out)[4:]
    again = walk(new, offset, api_key, version, is_request)
    assert again.end == found.end + (len(new) - len(frame)), (again.end, found.end)
    survivors = [
        (ep, mapping(ep))
        for ep in found.endpoints
        if not (mapping(ep) is None and ep.array is not None and ep.error_pos is None)
    ]
    assert len(again.endpoints) == len(survivors)
    for new_ep, (old_ep, target) in zip(again.endpoints, survivors, strict=True):
        if target is None:  # FindCoordinator entry or a lone endpoint: address blanked
            assert new_ep.host == "" and new_ep.port in (-1, 0), (old_ep, new_ep)
        else:
            assert (new_ep.host, new_ep.port) == target, (old_ep, new_ep, target)
    return found


def _check_skips(
    frame: bytes, offset: int, key: PlanKey, rng: random.Random, found: WalkResult | None
) -> None:
    """The response skip tests (tools/fuzz_skips.py): the scan over the whole body or a
    random first part of it, and a Fetch response's skim over random splits, against
    `found`, the frame's walk."""
    api_key, _, version = key
    stop = len(frame)
    if rng.random() < 0.2 and 0 <= offset <= stop:
        stop = rng.randint(offset, stop)
    check_scan(frame, offset, stop, api_key, version)
    if api_key == FETCH:
        check_skim(frame, offset, version, _splits(rng, frame[offset:]), found)


def exercise(data: bytes, key: PlanKey, rng: random.Random) -> None:
    """Feed one input to every entry point. Raises on a bug; ProtocolError is fine."""
    # Framing: the whole input, in random splits, against a small and a large limit.
    frames: list[memoryview] = []
    for limit in (64, 1 << 20):
        reader = FrameReader(limit)
        got: list[memoryview] = []
        try:
            for chunk in _splits(rng, data):
                got += reader.feed(chunk)
        except ProtocolError:
            pass
        for f in got:
            assert len(f) <= limit
        if limit > 64:
            frames = got
    # Cut-through: the same stream handed over in pieces, some frames gathered whole.
    through = FrameReader(1 << 20, stream_after=rng.choice((1, 16, 200)))
    with contextlib.suppress(ProtocolError):
        for chunk in _splits(rng, data):
            for item in through.feed_through(chunk):
                if isinstance(item, FrameStart) and rng.random() < 0.3:
                    through.gather()
    whole = memoryview(data)[4:] if len(data) >= 4 else memoryview(data)
    if not frames:
        frames = [whole]
    for frame in frames[:2]:
        offset = -1
        try:
            header = parse_request_header(frame)
            offset = header.body_offset
            if offset >= 0:
                produce_acks(frame, offset, len(frame), header.api_version)
        except ProtocolError:
            pass
        if offset < 0 or not key[1]:
            try:
                _corr, offset = parse_response_header(frame, 1 if rng.random() < 0.5 else 0)
            except ProtocolError:
                offset = 4
        found = _walk_and_rewrite(frame, offset, key, rng)
        other = PLAN_KEYS[rng.randrange(len(PLAN_KEYS))]
        _walk_and_rewrite(frame, min(offset, rng.choice((offset, 4, 5))), other, rng)
        if not key[1]:
            _check_skips(bytes(frame), offset, key, rng, found)
        with contextlib.suppress(ProtocolError):
            clamp_api_versions(frame, 4 if rng.random() < 0.8 else 5, rng.randrange(6))


def run_mutations(
    cases: int,
    seed: int,
    seeds: list[Seed],
    on_progress: Callable[[int, float], None] | None = None,
) -> tuple[int, float]:
    """The seeded mutation loop. Returns (cases run, slowest case in CPU seconds).

    Raises AssertionError (with the input as hex) on the first bug.
    """
    rng = random.Random(seed)
    slowest = 0.0
    # CPU time, not wall time: a case that waits for the scheduler on a busy machine is
    # not slow, one that loops is.
    clock = time.process_time
    for i in range(cases):
        r = rng.random()
        if r < 0.05 or not seeds:  # random bytes, sometimes with a plausible size prefix
            body = rng.randbytes(rng.randint(0, 200))
            data = struct.pack(">i", len(body)) + body if rng.random() < 0.5 else body
            key = PLAN_KEYS[rng.randrange(len(PLAN_KEYS))]
        else:
            s = seeds[rng.randrange(len(seeds))]
            other = seeds[rng.randrange(len(seeds))].wire
            data = s.wire if r < 0.07 else mutate(rng, s.wire, other)
            key = s.key if rng.random() < 0.7 else PLAN_KEYS[rng.randrange(len(PLAN_KEYS))]
        case_rng = random.Random(zlib.crc32(data) ^ i)
        start = clock()
        try:
            exercise(data, key, case_rng)
        except ProtocolError:
            pass
        except Exception as exc:
            raise AssertionError(
                f"case {i} (seed {seed}) plan {key}: {type(exc).__name__}: {exc}\n"
                f"input: {data.hex()}"
            ) from exc
        took = clock() - start
        slowest = max(slowest, took)
        if on_progress is not None and (i + 1) % 100_000 == 0:
            on_progress(i + 1, slowest)
    return cases, slowest


# --------------------------------------------------------------------------- atheris


def _instrument_kproxy(atheris: Any) -> None:
    """Coverage feedback from kproxy's own functions only.

    Instrumenting every loaded module (the standard library's ``random`` included, which
    each case calls to split its input) makes each case several times slower without
    adding edges that matter: the code under test is kproxy's.
    """
    for name, module in list(sys.modules.items()):
        if not name.startswith("kproxy") or module is None:
            continue
        for obj in vars(module).values():
            if getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj):
                atheris.instrument_func(obj)
            elif inspect.isclass(obj):
                for member in vars(obj).values():
                    func = getattr(member, "__func__", member)
                    if inspect.isfunction(func):
                        atheris.instrument_func(func)


def run_atheris(cases: int, corpus: Path, seeds: list[Seed], extra: list[str]) -> None:
    import atheris

    corpus.mkdir(parents=True, exist_ok=True)
    index = {k: i for i, k in enumerate(PLAN_KEYS)}
    for n, s in enumerate(seeds):
        sel = index.get(s.key, 0)
        (corpus / f"seed-{n:05d}").write_bytes(struct.pack("<H", sel) + s.wire)

    def one_input(data: bytes) -> None:
        if len(data) < 2:
            return
        sel = data[0] | data[1] << 8
        key = PLAN_KEYS[sel % len(PLAN_KEYS)]
        with contextlib.suppress(ProtocolError):
            exercise(data[2:], key, random.Random(zlib.crc32(data)))

    argv = [sys.argv[0], f"-runs={cases}", "-max_len=4096", "-print_final_stats=1", *extra]
    argv.append(str(corpus))
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", choices=("auto", "atheris", "mutate"), default="auto")
    parser.add_argument("--kio-per-version", type=int, default=4)
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/kproxy-fuzz-corpus"))
    parser.add_argument(
        "--instrument",
        choices=("kproxy", "all"),
        default="kproxy",
        help="coverage for kproxy's own code (fast) or every loaded module (atheris engine)",
    )
    parser.add_argument("libfuzzer", nargs="*", help="extra libFuzzer flags (atheris engine)")
    args = parser.parse_args()
    engine = args.engine
    if engine == "auto":
        try:
            import atheris

            del atheris
            engine = "atheris"
        except ImportError:
            engine = "mutate"
    seeds = all_seeds(args.kio_per_version, args.seed)
    print(f"engine {engine}, {len(seeds)} seeds, {len(PLAN_KEYS)} walk plans", flush=True)
    start = time.monotonic()
    if engine == "atheris":
        import atheris

        if args.instrument == "all":
            atheris.instrument_all()
        else:
            _instrument_kproxy(atheris)
        run_atheris(args.cases, args.corpus, seeds, args.libfuzzer)
        return 0

    def progress(done: int, slowest: float) -> None:
        rate = done / (time.monotonic() - start)
        print(f"{done} cases, {rate:.0f}/s, slowest {slowest * 1e3:.1f} ms", flush=True)

    try:
        done, slowest = run_mutations(args.cases, args.seed, seeds, progress)
    except AssertionError as exc:
        print(f"BUG: {exc}", flush=True)
        return 1
    took = time.monotonic() - start
    print(
        f"OK: {done} cases in {took:.0f} s ({done / took:.0f}/s), only ProtocolError raised, "
        f"slowest case {slowest * 1e3:.1f} ms (pid {os.getpid()})",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
