"""The fuzzer's seeds: the golden vectors (tests/golden/*.hex), random kio-encoded
messages of every endpoint-bearing (api, version) when kio and hypothesis are
installed, and a few ApiVersions responses; each a whole frame and the plan it is for.
"""

from __future__ import annotations

import random
import re
import struct
import warnings
from pathlib import Path

from kproxy.protocol.apis import APIS
from kproxy.protocol.plan import PLANS

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
PlanKey = tuple[int, bool, int]  # (api key, is request, version)
PLAN_KEYS: list[PlanKey] = sorted(PLANS)
_NAME_TO_KEY = {re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", i.name).lower(): k for k, i in APIS.items()}


class Seed:
    __slots__ = ("key", "wire")

    def __init__(self, wire: bytes, key: PlanKey) -> None:
        self.wire = wire  # a whole frame, size prefix included
        self.key = key


def golden_seeds() -> list[Seed]:
    out: list[Seed] = []
    for path in sorted(GOLDEN.glob("*.hex")):
        pattern = r"(.+?)_v(\d+)(?:_[a-z]+)?_(request|response)(\.rewritten)?\.hex"
        m = re.fullmatch(pattern, path.name)
        if m is None or m.group(1) not in _NAME_TO_KEY:
            continue
        key = (_NAME_TO_KEY[m.group(1)], m.group(3) == "request", int(m.group(2)))
        out.append(Seed(bytes.fromhex("".join(path.read_text().split())), key))
    return out


def api_versions_seeds() -> list[Seed]:
    """ApiVersions responses v0 (classic) and v3 (flexible, with a tagged field)."""
    keys = [(0, 0, 13), (3, 0, 99), (18, 0, 5), (1000, 0, 1)]
    v0 = struct.pack(">hi", 0, len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)
    v3 = (
        struct.pack(">h", 0)
        + bytes([len(keys) + 1])
        + b"".join(struct.pack(">hhh", *k) + b"\x00" for k in keys)
        + struct.pack(">i", 0)
        + b"\x01\x00\x03\x02\x01\x00"  # one tagged field (tag 0, 3 bytes)
    )
    out = []
    for version, body in ((0, v0), (3, v3)):
        payload = struct.pack(">i", 99) + body  # response header v0
        out.append(Seed(struct.pack(">i", len(payload)) + payload, (18, False, version)))
    return out


def kio_seeds(per_version: int, seed: int) -> list[Seed]:
    """Random kio messages of every walked (api, kind, version): those that carry
    endpoints or leadership, and DescribeConfigs answers; [] without kio."""
    try:
        from hypothesis.errors import NonInteractiveExampleWarning

        from tests import kio_support as ks
    except ImportError:
        return []
    out: list[Seed] = []
    warnings.simplefilter("ignore", NonInteractiveExampleWarning)
    walked = [*ks.ENDPOINT_MESSAGES, (32, "response", ks.kio_versions(32, "response"))]
    for api_key, kind, versions in walked:
        for version in versions:
            cls = ks.kio_message_class(
                api_key, version, "request" if kind == "request" else "response"
            )
            assert cls is not None
            for i, msg in enumerate(drawn_messages(cls, per_version)):
                if kind == "request":
                    wire = ks.encode_request_frame(msg, i, "fuzz")
                else:
                    wire = ks.encode_response_frame(msg, i)
                out.append(Seed(wire, (api_key, kind == "request", version)))
    random.Random(seed).shuffle(out)
    return out


def drawn_messages(cls: type, count: int) -> list[object]:
    """`count` kio messages of `cls` drawn by hypothesis, the same on every run (the first
    the emptiest)."""
    from hypothesis import HealthCheck, given, settings

    from tests.kio_strategies import message_strategy

    drawn: list[object] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(message_strategy(cls))
    def draw(msg: object) -> None:
        drawn.append(msg)

    draw()
    return drawn


def all_seeds(kio_per_version: int = 4, seed: int = 0) -> list[Seed]:
    return golden_seeds() + api_versions_seeds() + kio_seeds(kio_per_version, seed)
