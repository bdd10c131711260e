"""Walk plans: the generated message layouts, one per (api key, direction, version).

The generator (tools/generate_protocol.py) writes each message version as nested
tuples. A struct plan is `(fields, tagged, kind, path)`; a field is
`(op, role, arg, name)`. `op` says how the field is encoded, `role` says what kproxy
reads from it (a node id, a host, a partition's leader...), `kind` says what a struct
is (a broker endpoint, a partition, a topic). At import, plans are annotated with what
the walker needs to skip quickly: whether a subtree holds anything of interest, and the
fixed byte size of structs made only of fixed-width fields.
"""

from __future__ import annotations

from typing import Any

from kproxy.protocol.generated.messages import PLANS as _GENERATED
from kproxy.protocol.plan_codes import OP_ARRAY, OP_CARRAY, OP_FIXED, OP_NSTRUCT, OP_STRUCT

# A compiled struct: (fields, tagged, kind, path, interesting, fixed_size)
# A compiled field: (op, role, arg, name, interesting)
Struct = tuple[Any, ...]
Field = tuple[Any, ...]

_compiled: dict[int, Struct] = {}


def _compile_field(f: tuple[Any, ...]) -> Field:
    op, role, arg, name = f
    if op in (OP_STRUCT, OP_NSTRUCT):
        sub = _compile_struct(arg)
        return (op, role, sub, name, bool(role) or sub[4])
    if op in (OP_ARRAY, OP_CARRAY):
        elem_op, elem_arg = arg
        if elem_op == -1:
            sub = _compile_struct(elem_arg)
            return (op, role, (-1, sub), name, bool(role) or sub[4])
        return (op, role, arg, name, bool(role))
    return (op, role, arg, name, bool(role))


def _compile_struct(s: tuple[Any, ...]) -> Struct:
    done = _compiled.get(id(s))
    if done is not None:
        return done
    fields_raw, tagged_raw, kind, path = s
    fields = tuple(_compile_field(f) for f in fields_raw)
    tagged = None if tagged_raw is None else {t: _compile_field(f) for t, f in tagged_raw.items()}
    interesting = bool(kind) or any(f[4] for f in fields)
    if tagged:
        interesting = interesting or any(f[4] for f in tagged.values())
    fixed_size = -1
    if tagged is None and all(f[0] == OP_FIXED for f in fields):
        fixed_size = sum(f[2] for f in fields)
    out = (fields, tagged, kind, path, interesting, fixed_size)
    _compiled[id(s)] = out
    return out


PLANS: dict[tuple[int, bool, int], Struct] = {k: _compile_struct(v) for k, v in _GENERATED.items()}


def plan_for(api_key: int, is_request: bool, version: int) -> Struct | None:
    """The walk plan of a message, or None when kproxy has none for it."""
    return PLANS.get((api_key, is_request, version))


def walked_versions(api_key: int, is_request: bool) -> tuple[int, ...]:
    return tuple(sorted(v for (k, r, v) in PLANS if k == api_key and r == is_request))
