"""A gateway session under a hostile client: requests of every API and version kio
knows (drawn by hypothesis, their topics, groups and transactional ids renamed from a
few names some rules refuse), mutated as tools/fuzz_protocol.py mutates frames,
pipelined and split anywhere, answered by kio responses naming the tenant's, another
tenant's and the cluster's names, mutated the same way, through sessions with a tenant,
authorization rules, a quota and a principal in every mix.

Two properties. The session never raises and keeps its bounds: a bad frame becomes a
close, whatever the gateway's rules do with it. And what it forwards names only what
the tenant and the rules allow, and a tenant's client reads only names it sent or its
tenant's own, as kio reads them: kio stands for the broker and the client, which read
the bytes kproxy sends, not what kproxy read. A frame kio cannot read is no frame they
act on. kio's native reader aborts the process on some hostile lengths (it tries to
allocate them), so the cases' bytes are read in child processes.

Case counts: with HYPOTHESIS_PROFILE=ci, 6,000 cases each; otherwise (dev) 1,000.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import struct
import warnings
from typing import Any

import pytest
from hypothesis.errors import NonInteractiveExampleWarning
from kio.index import api_key_map
from kio.serial import entity_reader

from kproxy.config.authorization import AuthorizationSettings
from kproxy.config.tenancy import TenancySettings
from kproxy.protocol.entities import TOPIC, TRANSACTIONAL_ID
from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.authorization import Authorizer
from kproxy.session.identity import Identity
from kproxy.session.policy import ApiPolicy
from kproxy.session.quota import QuotaBook, QuotaRule
from kproxy.session.state import STREAM_REQUESTS_AFTER
from kproxy.session.tenancy import Tenancy
from tests import kio_support as ks
from tests.kio_entities import kind_of, kio_named
from tests.session.frames import address_map
from tools.fuzz_protocol import mutate
from tools.fuzz_seeds import drawn_messages

CASES = 6_000 if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 1_000
MAX_FRAME = 1 << 18
# Names the requests are given: some a rule refuses, some already carry the prefix.
NAMES = ("orders", "secret-1", "secret", "t-1", "t", "x", "a.secret", "a.orders")
# Names the broker's answers are given: the tenant's, another tenant's, the cluster's.
CLUSTER_NAMES = ("a.orders", "a.t-1", "a.x", "b.orders", "orders", "__consumer_offsets", "t")
TENANTS = {"tenants": [{"name": "team-a", "principals": ["User:alice"], "prefix": "a."}]}
RULES = {
    "rules": [
        # Checked with the names the cluster knows, after the tenant's prefix.
        {"effect": "deny", "topics": ["secret*", "a.secret*"]},
        {"effect": "allow", "topics": ["*"]},
        {"effect": "allow", "groups": ["*"], "operations": ["read"]},
        {"effect": "allow", "transactional_ids": ["t*", "a.t*"]},
    ]
}
WITH_RULES, WITH_TENANT, WITH_QUOTA = 1, 2, 4


@dataclasses.dataclass
class Case:
    kind: int  # which of WITH_RULES, WITH_TENANT and WITH_QUOTA the session has
    alice: bool  # the principal the tenant is for, or none at all
    forwarded: list[bytes] = dataclasses.field(default_factory=list)  # to the broker
    seen: list[bytes] = dataclasses.field(default_factory=list)  # to the client
    sent: list[bytes] = dataclasses.field(default_factory=list)  # the client's frames
    answers: list[bytes] = dataclasses.field(default_factory=list)  # the broker's frames
    reads: list[tuple[str, bytes]] = dataclasses.field(default_factory=list)  # what was fed


@pytest.fixture(scope="module")
def traffic() -> tuple[list[bytes], dict[tuple[int, int], list[Any]]]:
    """Request frames of every (api, version) kio has, and its responses' messages."""
    warnings.simplefilter("ignore", NonInteractiveExampleWarning)
    requests: list[bytes] = []
    responses: dict[tuple[int, int], list[Any]] = {}
    for api in sorted(api_key_map):
        for version in ks.kio_versions(api, "request"):
            request_cls = ks.kio_message_class(api, version, "request")
            response_cls = ks.kio_message_class(api, version, "response")
            if request_cls is None or response_cls is None:
                continue
            names = random.Random(api << 8 | version)
            for msg in drawn_messages(request_cls, 3)[1:]:  # the first drawn is the emptiest
                requests.append(ks.encode_request_frame(_renamed(msg, names, NAMES), 0, "app"))
            responses[(api, version)] = [
                _renamed(msg, names, CLUSTER_NAMES) for msg in drawn_messages(response_cls, 2)
            ]
    return requests, responses


def test_hostile_traffic_never_raises_and_keeps_the_bounds(
    traffic: tuple[list[bytes], dict[tuple[int, int], list[Any]]],
) -> None:
    rng = random.Random(20261207)
    for number in range(CASES):
        _run(rng, *traffic, number)


def test_the_broker_and_the_client_read_only_what_the_tenant_and_the_rules_allow(
    traffic: tuple[list[bytes], dict[tuple[int, int], list[Any]]],
) -> None:
    rng = random.Random(7)
    cases = [_run(rng, *traffic, number) for number in range(CASES)]
    ruled = [
        (number, case)
        for number, case in enumerate(cases)
        if case.forwarded and case.kind & (WITH_RULES | WITH_TENANT)
    ]
    assert len(ruled) > CASES // 4  # most such cases forward something
    for start in range(0, len(ruled), 200):
        batch = ruled[start : start + 200]
        said = _read_apart([case for _number, case in batch])
        if said is None:  # kio aborted on one of them: each alone
            said = [(_read_apart([case]) or [None])[0] for _number, case in batch]
        for (number, case), wrong in zip(batch, said, strict=True):
            assert wrong is None, f"case {number}: {wrong}\n" + _shown(case)


# -- one case ----------------------------------------------------------------------------


def _session(rng: random.Random) -> tuple[ProxySession, Case]:
    case = Case(rng.randrange(8), rng.random() < 0.8)
    authorizer = None
    if case.kind & WITH_RULES:
        authorizer = Authorizer.from_settings(AuthorizationSettings.model_validate(RULES))
    tenancy = None
    if case.kind & WITH_TENANT:
        tenancy = Tenancy.from_settings(TenancySettings.model_validate(TENANTS))
    quotas = None
    if case.kind & WITH_QUOTA:
        quotas = QuotaBook([QuotaRule("all", None, None, (1e4, 1e4, 100.0))], 1.0, 3)
    session = ProxySession(
        address_map(open_nodes=(1,)),
        SessionLimits(MAX_FRAME, rng.choice((1, 4)), 1 << 16),
        CLIENT_REFUSED_APIS,
        ApiPolicy("gateway", authorizer=authorizer, tenancy=tenancy),
        quotas=quotas,
    )
    session.client_host = "127.0.0.1"
    if case.alice:
        session.identity = Identity("sub")
        session.identity.principal = "User:alice"
    return session, case


def _run(
    rng: random.Random,
    requests: list[bytes],
    responses: dict[tuple[int, int], list[Any]],
    number: int,
) -> Case:
    """Up to three rounds of a few requests and their answers on one session."""
    session, case = _session(rng)
    now = 1.0
    try:
        for _round in range(rng.randint(1, 3)):
            sent: list[tuple[int, int, int]] = []
            batch = []
            for _ in range(rng.randint(1, 4)):
                corr = rng.randrange(1 << 16)
                frame = requests[rng.randrange(len(requests))]
                frame = frame[:8] + struct.pack(">i", corr) + frame[12:]
                api, version = struct.unpack_from(">hh", frame, 4)
                sent.append((api, version, corr))
                if rng.random() < 0.3:
                    frame = mutate(rng, frame, requests[rng.randrange(len(requests))])
                batch.append(frame)
                case.sent.append(frame)
            for piece in _pieces(rng, b"".join(batch)):
                now += 0.001
                case.reads.append(("client", piece))
                step = session.from_client(piece, now)
                case.forwarded.extend(bytes(chunk) for chunk in step.to_upstream)
                case.seen.extend(bytes(chunk) for chunk in step.answers or ())
                assert len(session.inflight) <= session.max_in_flight
                assert session.client_bytes_pending <= MAX_FRAME + 4
                assert session.waiting_bytes <= MAX_FRAME + STREAM_REQUESTS_AFTER
                if step.close is not None:
                    return case
            if rng.random() < 0.1:
                rng.shuffle(sent)
            answers = []
            for api, version, corr in sent:
                drawn = responses[(api, version)]
                answer = ks.encode_response_frame(drawn[rng.randrange(len(drawn))], corr)
                answer = mutate(rng, answer, answer) if rng.random() < 0.3 else answer
                answers.append(answer)
                case.answers.append(answer)
            for piece in _pieces(rng, b"".join(answers)):
                now += 0.001
                case.reads.append(("broker", piece))
                got = session.from_upstream(piece, now)
                case.seen.extend(bytes(chunk) for chunk in got.to_client)
                if got.more is not None:  # requests released from waiting
                    case.forwarded.extend(bytes(chunk) for chunk in got.more.to_upstream)
                if got.close is not None or got.nodes_needing_listeners:
                    return case
    except Exception as exc:
        failed = f"case {number}: {type(exc).__name__}: {exc}"
        raise AssertionError(failed + "\n" + _shown(case)) from exc
    finally:
        session.close()
    return case


def _pieces(rng: random.Random, data: bytes) -> list[bytes]:
    """`data` as one read, or cut in up to four."""
    if rng.random() < 0.6 or len(data) < 2:
        return [data]
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 3))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _shown(case: Case) -> str:
    return "\n".join(f"{side}: {data.hex()}" for side, data in case.reads[-6:])


# -- what the broker and the client read ------------------------------------------------


def _read_apart(cases: list[Case]) -> list[str | None] | None:
    """What is wrong with each case's bytes as kio reads them (None: nothing), read in a
    child process, which kio's native reader may abort (then None for all)."""
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        os.close(readable)
        said = [_wrong_forwarded(case) or _wrong_seen(case) for case in cases]
        with os.fdopen(writable, "w") as out:
            json.dump(said, out)
        os._exit(0)
    os.close(writable)
    with os.fdopen(readable) as said_by_child:
        said = said_by_child.read()
    _pid, status = os.waitpid(child, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return None
    wrong: list[str | None] = json.loads(said)
    return wrong


def _wrong_forwarded(case: Case) -> str | None:
    """A name the tenant or the rules refuse in what reached the broker."""
    for frame in _frames(b"".join(case.forwarded)):
        for what, name in _named(frame):
            if case.kind & WITH_TENANT and not (case.alice and name.startswith("a.")):
                return f"{what} {name!r} reached the broker outside the tenant's prefix"
            if case.kind & WITH_RULES:
                if what == TOPIC and name.startswith(("secret", "a.secret")):
                    return f"the refused topic {name!r} reached the broker"
                if what == TRANSACTIONAL_ID and not name.startswith(("t", "a.t")):
                    return f"the refused transactional id {name!r} reached the broker"
    return None


def _wrong_seen(case: Case) -> str | None:
    """A name a tenant's client read that is neither in the bytes it sent nor the
    tenant's own (prefixed) in the broker's bytes. Bytes, not what kio reads of them:
    kproxy may read a name in a frame kio refuses, and answer with it. (A connection no
    tenant matches has only requests that name nothing forwarded, which a broker
    answers naming nothing of anyone's.)"""
    if not (case.kind & WITH_TENANT and case.alice):
        return None
    asked: dict[int, tuple[int, int]] = {}
    for frame in case.sent:
        if len(frame) >= 12:
            api, version, corr = struct.unpack_from(">hhi", frame, 4)
            asked[corr] = (api, version)
    sent = b"".join(case.sent)
    answered = b"".join(case.answers)
    for frame in _frames(b"".join(case.seen)):
        if len(frame) >= 4:
            (corr,) = struct.unpack_from(">i", frame)
            for what, name in _named(frame, asked.get(corr)):
                raw = name.encode()
                if raw not in sent and b"a." + raw not in answered:
                    return f"the client read {what} {name!r}, not its tenant's"
    return None


def _frames(stream: bytes) -> list[bytes]:
    """The frames of a stream, without their sizes (a last incomplete one included)."""
    frames, pos = [], 0
    while pos + 4 <= len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        frames.append(stream[pos + 4 : pos + 4 + max(size, 0)])
        pos += 4 + max(size, 0)
    return frames


def _named(frame: bytes, answering: tuple[int, int] | None = None) -> list[tuple[str, str]]:
    """The entities a request (or the response to `answering`'s api and version) names as
    kio reads it: its header, then its body, bytes after the body left unread; none when
    kio cannot read it (no broker or client acts on such a frame)."""
    try:
        if answering is None:
            api, version = struct.unpack_from(">hh", frame)
            cls = ks.kio_message_class(api, version, "request")
            header_class = ks.request_header_class
        else:
            cls = ks.kio_message_class(*answering, "response")
            header_class = ks.response_header_class
        if cls is None:
            return []
        _header, offset = entity_reader(header_class(cls))(frame, 0)
        message, _end = entity_reader(cls)(frame, offset)
    except Exception:
        return []
    return kio_named(message)


# -- the requests -----------------------------------------------------------------------


def _renamed(value: Any, rng: random.Random, names: tuple[str, ...]) -> Any:
    """`value` with every topic name, group id and transactional id one of `names`."""
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if kind_of(field.type) is not None:
            if isinstance(item, tuple):
                changes[field.name] = tuple(type(x)(rng.choice(names)) if x else x for x in item)
            elif item:
                changes[field.name] = type(item)(rng.choice(names))
        elif isinstance(item, tuple) and item and dataclasses.is_dataclass(item[0]):
            changes[field.name] = tuple(_renamed(x, rng, names) for x in item)
        elif dataclasses.is_dataclass(item):
            changes[field.name] = _renamed(item, rng, names)
    return dataclasses.replace(value, **changes) if changes else value
