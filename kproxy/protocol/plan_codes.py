"""The codes of the walk plans: how a field is encoded, what kproxy reads from it.

One source for both sides: `tools/generate_protocol.py` writes plans with these
numbers and `kproxy/protocol/plan.py` reads them.
"""

from __future__ import annotations

from typing import Final

# Each a `Final` constant: compiled (mypyc), a plan's interpreters compare with them as
# with literals.

# How a field is encoded (op).
OP_FIXED: Final = 0
OP_STR: Final = 1
OP_CSTR: Final = 2
OP_BYTES: Final = 3
OP_CBYTES: Final = 4
OP_ARRAY: Final = 5
OP_CARRAY: Final = 6
OP_STRUCT: Final = 7
OP_NSTRUCT: Final = 8
# What kproxy reads from a field (role).
R_NONE: Final = 0
R_NODE_ID: Final = 1
R_HOST: Final = 2
R_PORT: Final = 3
R_LISTENER: Final = 4
R_RACK: Final = 5
R_ERROR: Final = 6
R_PARTITION: Final = 7
R_LEADER_ID: Final = 8
R_LEADER_EPOCH: Final = 9
R_TOPIC_NAME: Final = 10
R_TOPIC_ID: Final = 11
R_HINT_LEADER_ID: Final = 12
R_HINT_LEADER_EPOCH: Final = 13
R_CONFIG_NAME: Final = 14
R_CONFIG_VALUE: Final = 15
R_SENSITIVE: Final = 16
# What a struct is (kind, a bit set).
K_ENDPOINT: Final = 1
K_PARTITION: Final = 2
K_INLINE: Final = 4
K_NODE_PARENT: Final = 8
K_TOPIC: Final = 16
K_CONFIG: Final = 32
