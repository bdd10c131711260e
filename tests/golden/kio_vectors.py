"""Golden vectors encoded by kio (Kafka 4.x versions), with the endpoints and leaders
kio decodes from them, checked when tests/golden/make_golden.py wrote them.
"""

from __future__ import annotations

from tests.golden.vectors import TOPIC_ID, TOPIC_ID_2, Vector

KIO_VECTORS = [
    Vector(
        "metadata_v1_response",
        3,
        1,
        "response",
        endpoints=[
            ("Brokers[]", 1, None, "broker-1.internal", 9092, "r1"),
            ("Brokers[]", 2, None, "broker-2.internal", 9093, None),
            ("Brokers[]", 99, None, "broker-99.internal", 9094, "r3"),
        ],
        leaders=[
            ("orders", None, 0, 0, 1, None, False),
            ("orders", None, 1, 5, -1, None, False),
        ],
    ),
    Vector(
        "metadata_v12_response",
        3,
        12,
        "response",
        endpoints=[
            ("Brokers[]", 1, None, "broker-1.internal", 9092, "r1"),
            ("Brokers[]", 2, None, "broker-2.internal", 9093, None),
            ("Brokers[]", 99, None, "broker-99.internal", 9094, "r3"),
        ],
        leaders=[
            ("orders", TOPIC_ID, 0, 0, 1, 5, False),
            ("orders", TOPIC_ID, 1, 5, -1, 5, False),
        ],
    ),
    Vector(
        "metadata_v13_response",
        3,
        13,
        "response",
        endpoints=[
            ("Brokers[]", 1, None, "broker-1.internal", 9092, "r1"),
            ("Brokers[]", 2, None, "broker-2.internal", 9093, None),
            ("Brokers[]", 99, None, "broker-99.internal", 9094, "r3"),
        ],
        leaders=[
            ("orders", TOPIC_ID, 0, 0, 1, 5, False),
            ("orders", TOPIC_ID, 1, 5, -1, 5, False),
        ],
    ),
    Vector(
        "find_coordinator_v3_response",
        10,
        3,
        "response",
        endpoints=[
            ("", 2, None, "broker-2.internal", 9093, None),
        ],
        leaders=[],
    ),
    Vector(
        "find_coordinator_v6_response",
        10,
        6,
        "response",
        endpoints=[
            ("Coordinators[]", 1, None, "broker-1.internal", 9092, None),
            ("Coordinators[]", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[],
    ),
    Vector(
        "describe_cluster_v2_response",
        60,
        2,
        "response",
        endpoints=[
            ("Brokers[]", 1, None, "broker-1.internal", 9092, "r1"),
            ("Brokers[]", 99, None, "broker-99.internal", 9094, None),
        ],
        leaders=[],
    ),
    Vector(
        "produce_v11_response",
        0,
        11,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 2, None, "broker-2.internal", 9093, "r2"),
        ],
        leaders=[
            ("orders", None, 0, 0, None, None, False),
            ("orders", None, 1, 6, 2, 8, True),
        ],
    ),
    Vector(
        "produce_v13_response",
        0,
        13,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 2, None, "broker-2.internal", 9093, "r2"),
        ],
        leaders=[
            (None, TOPIC_ID, 0, 0, None, None, False),
            (None, TOPIC_ID, 1, 6, 2, 8, True),
        ],
    ),
    Vector(
        "fetch_v12_response",
        1,
        12,
        "response",
        endpoints=[],
        leaders=[
            ("orders", None, 0, 0, None, None, False),
            ("orders", None, 1, 6, 3, 4, True),
        ],
    ),
    Vector(
        "fetch_v16_response",
        1,
        16,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 3, None, "broker-3.internal", 9095, None),
            ("NodeEndpoints[]", 99, None, "broker-99.internal", 9094, "r3"),
        ],
        leaders=[
            (None, TOPIC_ID, 0, 0, None, None, False),
            (None, TOPIC_ID, 1, 6, 3, 4, True),
        ],
    ),
    Vector(
        "share_fetch_v1_response",
        78,
        1,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 2, None, "broker-2.internal", 9093, "r2"),
        ],
        leaders=[
            (None, TOPIC_ID, 0, 6, 2, 9, True),
        ],
    ),
    Vector(
        "share_acknowledge_v2_response",
        79,
        2,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 99, None, "broker-99.internal", 9094, None),
            ("NodeEndpoints[]", 1, None, "broker-1.internal", 9092, "r1"),
        ],
        leaders=[
            (None, TOPIC_ID, 3, 74, 99, 10, True),
        ],
    ),
    Vector(
        "vote_v2_response",
        52,
        2,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 3001, None, "controller-1.internal", 9097, None),
            ("NodeEndpoints[]", 99, None, "controller-99.internal", 9098, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, 0, 3001, 12, False),
        ],
    ),
    Vector(
        "begin_quorum_epoch_v1_response",
        53,
        1,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 3001, None, "controller-1.internal", 9097, None),
            ("NodeEndpoints[]", 99, None, "controller-99.internal", 9098, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, 0, 3001, 12, False),
        ],
    ),
    Vector(
        "end_quorum_epoch_v1_response",
        54,
        1,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 3001, None, "controller-1.internal", 9097, None),
            ("NodeEndpoints[]", 99, None, "controller-99.internal", 9098, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, 0, 3001, 12, False),
        ],
    ),
    Vector(
        "fetch_snapshot_v1_response",
        59,
        1,
        "response",
        endpoints=[
            ("NodeEndpoints[]", 3001, None, "controller-1.internal", 9097, None),
            ("NodeEndpoints[]", 99, None, "controller-99.internal", 9098, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, 0, 3001, 12, True),
        ],
    ),
    Vector(
        "describe_quorum_v2_response",
        55,
        2,
        "response",
        endpoints=[
            ("Nodes[].Listeners[]", 3001, "CONTROLLER", "controller-1.internal", 9097, None),
            ("Nodes[].Listeners[]", 3001, "CONTROLLER_SSL", "controller-1.internal", 9197, None),
            ("Nodes[].Listeners[]", 99, "CONTROLLER", "controller-99.internal", 9098, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, 0, 3001, 12, False),
        ],
    ),
    Vector(
        "update_raft_voter_v0_response",
        82,
        0,
        "response",
        endpoints=[
            ("CurrentLeader", 3001, None, "controller-1.internal", 9097, None),
        ],
        leaders=[],
    ),
    Vector(
        "list_offsets_v11_response",
        2,
        11,
        "response",
        endpoints=[],
        leaders=[
            ("orders", None, 0, 0, None, 5, False),
        ],
    ),
    Vector(
        "offset_for_leader_epoch_v4_response",
        23,
        4,
        "response",
        endpoints=[],
        leaders=[
            ("orders", None, 1, 0, None, 7, False),
        ],
    ),
    Vector(
        "describe_topic_partitions_v0_response",
        75,
        0,
        "response",
        endpoints=[],
        leaders=[
            ("orders", TOPIC_ID, 0, 0, 1, 5, False),
        ],
    ),
    Vector(
        "alter_partition_v3_response",
        56,
        3,
        "response",
        endpoints=[],
        leaders=[
            (None, TOPIC_ID_2, 2, 0, 2, 6, False),
        ],
    ),
    Vector(
        "begin_quorum_epoch_v1_request",
        53,
        1,
        "request",
        endpoints=[
            ("LeaderEndpoints[]", None, "CONTROLLER", "controller-1.internal", 9097, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, None, 3001, 12, False),
        ],
    ),
    Vector(
        "end_quorum_epoch_v1_request",
        54,
        1,
        "request",
        endpoints=[
            ("LeaderEndpoints[]", None, "CONTROLLER", "controller-1.internal", 9097, None),
        ],
        leaders=[
            ("__cluster_metadata", None, 0, None, 3001, 12, False),
        ],
    ),
    Vector(
        "add_raft_voter_v1_request",
        80,
        1,
        "request",
        endpoints=[
            ("Listeners[]", 3003, "CONTROLLER", "controller-3.internal", 9099, None),
        ],
        leaders=[],
    ),
    Vector(
        "update_raft_voter_v0_request",
        82,
        0,
        "request",
        endpoints=[
            ("Listeners[]", 3002, "CONTROLLER", "controller-2.internal", 9096, None),
        ],
        leaders=[],
    ),
    Vector(
        "broker_registration_v4_request",
        62,
        4,
        "request",
        endpoints=[
            ("Listeners[]", 1, "PLAINTEXT", "broker-1.internal", 9092, None),
            ("Listeners[]", 1, "SSL", "broker-1.internal", 9192, None),
        ],
        leaders=[],
    ),
    Vector(
        "controller_registration_v0_request",
        70,
        0,
        "request",
        endpoints=[
            ("Listeners[]", 99, "CONTROLLER", "controller-99.internal", 9098, None),
        ],
        leaders=[],
    ),
]
