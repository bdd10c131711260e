"""Golden vectors written by hand from the schemas: versions kio lacks (3.9-only
inter-broker messages, ShareFetch v0, Produce v2) and a few old client versions.
"""

from __future__ import annotations

from tests.golden.vectors import TOPIC_ID, Vector

HAND_VECTORS = [
    Vector(
        "metadata_v0_response",
        3,
        0,
        "response",
        endpoints=[
            ("Brokers[]", 1, None, "broker-1.internal", 9092, None),
            ("Brokers[]", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[
            ("orders", None, 0, 0, 1, None, False),
            ("orders", None, 1, 0, 99, None, False),
        ],
        by_hand=True,
    ),
    Vector(
        "find_coordinator_v0_response",
        10,
        0,
        "response",
        endpoints=[
            ("", 1, None, "broker-1.internal", 9092, None),
        ],
        leaders=[],
        by_hand=True,
    ),
    Vector(
        "find_coordinator_v0_unmapped_response",
        10,
        0,
        "response",
        endpoints=[
            ("", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[],
        by_hand=True,
    ),
    Vector(
        "produce_v2_response",
        0,
        2,
        "response",
        endpoints=[],
        leaders=[
            ("orders", None, 0, 0, None, None, False),
            ("orders", None, 1, 6, None, None, False),
        ],
        by_hand=True,
    ),
    Vector(
        "fetch_v4_response",
        1,
        4,
        "response",
        endpoints=[],
        leaders=[
            ("orders", None, 0, 0, None, None, False),
            ("orders", None, 1, 6, None, None, False),
        ],
        by_hand=True,
    ),
    Vector(
        "share_fetch_v0_response",
        78,
        0,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 2, None, "broker-2.internal", 9093, "r2"),
            ("NodeEndpoints[]", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[
            (None, TOPIC_ID, 0, 6, 2, 9, True),
        ],
        by_hand=True,
    ),
    Vector(
        "leader_and_isr_v0_request",
        4,
        0,
        "request",
        endpoints=[
            ("LiveLeaders[]", 1, None, "broker-1.internal", 9092, None),
            ("LiveLeaders[]", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[
            ("orders", None, 0, None, 1, 5, False),
            ("orders", None, 1, None, 99, 2, False),
        ],
        by_hand=True,
    ),
    Vector(
        "update_metadata_v0_request",
        6,
        0,
        "request",
        endpoints=[
            ("LiveBrokers[]", 2, None, "broker-2.internal", 9093, None),
            ("LiveBrokers[]", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[
            ("orders", None, 0, None, 2, 6, False),
        ],
        by_hand=True,
    ),
    Vector(
        "update_metadata_v3_request",
        6,
        3,
        "request",
        endpoints=[
            ("LiveBrokers[].Endpoints[]", 1, "PLAINTEXT", "broker-1.internal", 9092, None),
            ("LiveBrokers[].Endpoints[]", 1, "SSL", "broker-1.internal", 9192, None),
            ("LiveBrokers[].Endpoints[]", 99, "PLAINTEXT", "broker-99.internal", 9094, None),
        ],
        leaders=[
            ("orders", None, 2, None, 1, 7, False),
        ],
        by_hand=True,
    ),
]
