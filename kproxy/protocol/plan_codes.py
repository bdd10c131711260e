"""The codes of the walk plans: how a field is encoded, what kproxy reads from it.

One source for both sides: `tools/generate_protocol.py` writes plans with these
numbers and `kproxy/protocol/plan.py` reads them.
"""

from __future__ import annotations

# How a field is encoded (op).
OP_FIXED, OP_STR, OP_CSTR, OP_BYTES, OP_CBYTES, OP_ARRAY, OP_CARRAY, OP_STRUCT, OP_NSTRUCT = range(
    9
)
# What kproxy reads from a field (role).
(
    R_NONE,
    R_NODE_ID,
    R_HOST,
    R_PORT,
    R_LISTENER,
    R_RACK,
    R_ERROR,
    R_PARTITION,
    R_LEADER_ID,
    R_LEADER_EPOCH,
    R_TOPIC_NAME,
    R_TOPIC_ID,
    R_HINT_LEADER_ID,
    R_HINT_LEADER_EPOCH,
    R_CONFIG_NAME,
    R_CONFIG_VALUE,
    R_SENSITIVE,
) = range(17)
# What a struct is (kind, a bit set).
K_ENDPOINT, K_PARTITION, K_INLINE, K_NODE_PARENT, K_TOPIC, K_CONFIG = 1, 2, 4, 8, 16, 32
