"""Fuzz the protocol core: mutated and random frames raise only ProtocolError, quickly.

The bulk is the seeded mutation loop of tools/fuzz_protocol.py (bit flips, interesting
bytes, truncation, insertion, deletion, duplication, length-field corruption, splicing,
random bytes) over kio-encoded and golden frames, fed to FrameReader, the request and
response header parsers, produce_acks, walk (the seed's plan and any other), rewrite
(a frame that walked must still walk after its rewrite, with the new addresses), the
response scans and the streamed Fetch skim (what they let pass unwalked, the walker
finds nothing in: tools/fuzz_skips.py) and clamp_api_versions. On top of it, two
systematic passes: every prefix of every seed against its plan, and random bytes
against every plan.

Case counts: with HYPOTHESIS_PROFILE=ci, 120,000 mutation cases plus about 80,000
systematic ones; otherwise (dev) 20,000 plus the systematic ones. No case may take more
than a second of CPU time (a true hang trips pytest-timeout).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from kproxy.protocol.api_versions import clamp_api_versions
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.headers import parse_request_header, parse_response_header
from kproxy.protocol.walker import walk

ROOT = Path(__file__).resolve().parents[2]
CI = os.environ.get("HYPOTHESIS_PROFILE") == "ci"
MUTATION_CASES = 120_000 if CI else 20_000
RANDOM_PER_PLAN = 300 if CI else 50
SLOWEST_ALLOWED_S = 1.0  # CPU seconds: a hang or a quadratic walk, not a busy machine


def _load_fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fuzz_protocol", ROOT / "tools" / "fuzz_protocol.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_protocol", module)
    spec.loader.exec_module(module)
    return module


fp = _load_fuzzer()

from tools.fuzz_seeds import PLAN_KEYS, all_seeds, golden_seeds  # noqa: E402


@pytest.fixture(scope="module")
def seeds() -> list[object]:
    return list(all_seeds(kio_per_version=2, seed=0))


def test_seeds_cover_every_family(seeds: list[object]) -> None:
    """Golden vectors of every walked family and kio frames of every kio version."""
    keys = {s.key for s in seeds}  # type: ignore[attr-defined]
    walked = {(k, r) for (k, r, _v) in PLAN_KEYS}
    assert walked <= {(k, r) for (k, r, _v) in keys}
    assert len(golden_seeds()) >= 70
    assert len(seeds) >= 250


def test_mutation_loop(seeds: list[object], capsys: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    done, slowest = fp.run_mutations(MUTATION_CASES, 20261122, seeds)
    took = time.monotonic() - start
    assert done == MUTATION_CASES
    assert slowest < SLOWEST_ALLOWED_S
    with capsys.disabled():
        print(
            f"\nfuzz: {done} mutation cases in {took:.1f} s, slowest {slowest * 1e3:.1f} ms",
            end=" ",
        )


def test_every_prefix_of_every_seed(seeds: list[object]) -> None:
    """Truncated anywhere, a frame is a ProtocolError (or a shorter valid message)."""
    cases = 0
    for s in seeds:
        wire: bytes = s.wire  # type: ignore[attr-defined]
        api_key, is_request, version = s.key  # type: ignore[attr-defined]
        for cut in range(4, len(wire)):
            frame = memoryview(wire)[4:cut]
            offset = 4
            with contextlib.suppress(ProtocolError):
                if is_request:
                    offset = parse_request_header(frame).body_offset
                else:
                    offset = parse_response_header(frame, 0)[1]
            rng = random.Random(cut)
            with contextlib.suppress(ProtocolError):
                fp.exercise(wire[:cut], s.key, rng)  # type: ignore[attr-defined]
            try:
                result = walk(frame, max(offset, 0), api_key, version, is_request)
            except ProtocolError:
                pass
            else:
                assert result.end <= len(frame)
            cases += 1
    assert cases > 20_000


def test_random_bytes_every_plan() -> None:
    rng = random.Random(7)
    for key in PLAN_KEYS:
        api_key, is_request, version = key
        for _ in range(RANDOM_PER_PLAN):
            body = rng.randbytes(rng.choice((0, 1, 5, 16, 64, 300)))
            for offset in (0, min(4, len(body))):
                with contextlib.suppress(ProtocolError):
                    walk(body, offset, api_key, version, is_request)
            with contextlib.suppress(ProtocolError):
                fp.exercise(len(body).to_bytes(4, "big") + body, key, rng)


def test_random_bytes_api_versions_and_headers() -> None:
    rng = random.Random(11)
    for _ in range(5_000 if CI else 1_000):
        frame = memoryview(rng.randbytes(rng.randrange(0, 64)))
        for version in range(6):
            with contextlib.suppress(ProtocolError):
                clamp_api_versions(frame, 4, version)
        with contextlib.suppress(ProtocolError):
            parse_request_header(frame)
        for header_version in (0, 1):
            with contextlib.suppress(ProtocolError):
                parse_response_header(frame, header_version)
        reader = FrameReader(rng.choice((0, 16, 1 << 20)))
        with contextlib.suppress(ProtocolError):
            reader.feed(frame)
