"""A real KRaft controller quorum through kproxy (KIP-853, Apache Kafka 3.9 and 4.x).

Three dedicated controllers and two brokers (`tests/peers/kraft_quorum.py`): every
controller advertises kproxy's port for itself, the quorum is formatted with
``--initial-controllers`` naming kproxy's ports, and the controllers' real addresses are
``controller-N.quorum.invalid`` names only kproxy's dial overrides resolve. The module
shares one cluster and one kproxy; its tests run in order, each leaving the quorum whole:

* the quorum forms and the brokers register through kproxy, and the controllers' own
  listeners hold connections from kproxy only;
* ``kafka-metadata-quorum`` through kproxy (``--bootstrap-controller`` and, through a
  broker, ``--bootstrap-server``) shows only kproxy's addresses;
* the active controller is killed: a new leader is elected through kproxy, kproxy's
  /topology, metrics and event log show it, and the old one rejoins as a follower;
* ``add-controller`` makes a fourth controller a voter, a quiet minute passes without a
  single UpdateRaftVoter, and ``remove-controller`` takes it out again;
* a producer writes through kproxy's client listeners all along; every acknowledged
  record is read back at the end.

All of it runs on three Apache Kafka releases, one after the other: the one every other
real-Kafka test runs, the last 3.x (KIP-853 came in 3.9) and the newest
(``OTHER_RELEASES``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.churn_traffic import read_event_files
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_install import KAFKA_VERSION, OTHER_RELEASES
from tests.peers.kraft_quorum import QuorumCluster
from tests.peers.net import LOOPBACK, connected_peers, wait_until
from tests.peers.procs import log_tail

pytestmark = [pytest.mark.peers, pytest.mark.slow]

MAIN_CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # kafka-configs

TOPIC = "through-the-quorum"
VOTERS = (1, 2, 3)
SPARE = 4
# host:port pairs in the tools' output (endpoints print as CONTROLLER://host:port).
ADDRESS = re.compile(r"([A-Za-z0-9.\-]+):(\d{2,5})\b")


class Traffic:
    """A producer through kproxy's client listener, acks=all, one record every 20 ms."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        self.bootstrap = bootstrap
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
        )
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(msg.value())
        else:
            self.failed.append(str(err))

    def _run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            self.producer.produce(TOPIC, b"record-%d" % seq, on_delivery=self._delivered)
            seq += 1
            self.producer.poll(0.02)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert self.producer.flush(60) == 0, "records still unacknowledged after 60 s"

    def read_back(self) -> set[bytes]:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "quorum-read-back",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([TOPIC])
        seen: set[bytes] = set()
        try:

            def all_read() -> bool:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen.add(msg.value())
                return self.acked <= seen

            wait_until(all_read, 120, interval=0, what="every acknowledged record read back")
        finally:
            consumer.close()
        return seen


@pytest.fixture(scope="module", params=[KAFKA_VERSION, *OTHER_RELEASES])
def quorum(request: pytest.FixtureRequest) -> Iterator[QuorumCluster]:
    with QuorumCluster(VOTERS, (SPARE,), (11, 12), version=request.param) as cluster:
        yield cluster.format()


@pytest.fixture(scope="module")
def kproxy(
    quorum: QuorumCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    config = quorum.kproxy_config()
    tmp = tmp_path_factory.mktemp("kproxy-quorum")
    kp = KproxyProcess(
        tmp,
        config["cluster"]["bootstrap_servers"],
        cluster=config["cluster"],
        quorum=config["quorum"],
    )
    with kp.start():
        try:
            # The brokers start once the voters have a leader: an election never competes
            # with two more JVMs starting on the machine's cores, and a failure says which
            # of the two steps did not happen.
            for node_id in VOTERS:
                quorum.start_node(node_id)
            wait_until(
                lambda: quorum_view(kp)["leader"] in VOTERS,
                120,
                what="a quorum leader seen by kproxy",
            )
            for node_id in (11, 12):
                quorum.start_node(node_id)
            quorum.wait_brokers_registered(180)
        except (TimeoutError, RuntimeError, OSError) as exc:
            # kproxy gone (its admin port refusing) is a failure to tell as well.
            try:
                view: Any = quorum_view(kp)
            except OSError as gone:
                view = f"none, its admin port failed: {gone!r}"
            # The nodes' own accounts last: a CI log shows only its tail.
            raise AssertionError(
                f"{exc}\nkproxy's quorum view: {view}\n"
                f"kproxy's log, last lines:\n{log_tail(kp.log_path, 15)}\n"
                f"what each node said:\n{quorum.story()}\n{exc}"
            ) from exc
        yield kp


@pytest.fixture(scope="module")
def traffic(quorum: QuorumCluster, kproxy: KproxyProcess) -> Iterator[Traffic]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kproxy.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 2)])[TOPIC].result(60)
    flow = Traffic(kproxy.bootstrap)
    flow.thread.start()
    wait_until(lambda: len(flow.acked) >= 10, 60, what="records acknowledged through kproxy")
    yield flow
    flow.finish()


def quorum_view(kp: KproxyProcess) -> dict[str, Any]:
    view: dict[str, Any] = kp.topology()["quorum"]
    return view


def kproxy_addresses(quorum: QuorumCluster) -> set[str]:
    return {quorum.kproxy_controller(n.node_id) for n in quorum.controllers()}


def assert_only_kproxy_addresses(
    text: str, quorum: QuorumCluster, kp: KproxyProcess, *, may_be_empty: bool = False
) -> None:
    """Every host:port the output names is one of kproxy's; no real controller address,
    no real port and no `.invalid` name appears."""
    assert ".invalid" not in text, text
    real_ports = {str(n.ports["real"]) for n in quorum.controllers()}
    real_ports |= {str(b.ports[p]) for b in quorum.brokers() for p in ("internal", "external")}
    allowed = kproxy_addresses(quorum) | {kp.bootstrap}
    named = {f"{h}:{p}" for h, p in ADDRESS.findall(text) if h == LOOPBACK or "." in h}
    assert named or may_be_empty, f"no address in:\n{text}"
    assert named <= allowed | set(_node_addresses(kp)), (named, text)
    assert not {p for _, p in ADDRESS.findall(text)} & real_ports, text


def _node_addresses(kp: KproxyProcess) -> list[str]:
    return [n["kproxy"] for n in kp.topology()["nodes"] if n["kproxy"]]


def voters(status: str) -> dict[int, list[str]]:
    line = next(li for li in status.splitlines() if li.startswith("CurrentVoters:"))
    return {v["id"]: v["endpoints"] for v in json.loads(line.split(":", 1)[1])}


def update_raft_voter_requests(kp: KproxyProcess) -> float:
    return kp.metric("kproxy_frames_total", api="UpdateRaftVoter", direction="request")


def test_quorum_forms_through_kproxy_alone(
    quorum: QuorumCluster, kproxy: KproxyProcess, traffic: Traffic
) -> None:
    wait_until(lambda: quorum_view(kproxy)["leader"] in VOTERS, 60, what="a quorum leader seen")
    view = quorum_view(kproxy)
    assert {c["id"]: c["address"] for c in view["controllers"]} == {
        n.node_id: quorum.real_controller(n.node_id) for n in quorum.controllers()
    }
    assert kproxy.metric("kproxy_quorum_leader") == view["leader"]
    assert kproxy.metric("kproxy_quorum_epoch") >= 1
    # Every connection a controller's own listener holds comes from kproxy (a follower
    # may hold none: only the leader is fetched from).
    peers = {n: connected_peers(quorum.nodes[n].ports["real"]) for n in VOTERS}
    assert peers[view["leader"]], f"the leader has no connection at all: {peers}"
    owners = {pid for by_port in peers.values() for pids in by_port.values() for pid in pids}
    assert owners == {kproxy.pid}, peers
    assert not traffic.failed


def test_metadata_quorum_tool_sees_only_kproxy(
    quorum: QuorumCluster, kproxy: KproxyProcess
) -> None:
    status = quorum.metadata_quorum("describe", "--status")
    assert sorted(voters(status)) == list(VOTERS), status
    assert_only_kproxy_addresses(status, quorum, kproxy)
    replication = quorum.metadata_quorum("describe", "--replication")
    assert "Leader" in replication and "Follower" in replication, replication
    assert ".invalid" not in replication
    # Through a broker (DescribeQuorum is forwarded to the active controller): the
    # controllers' endpoints are kproxy's controller ports, not broker ports.
    through_broker = quorum.metadata_quorum("describe", "--status", server=kproxy.bootstrap)
    assert voters(through_broker) == voters(status)
    assert_only_kproxy_addresses(through_broker, quorum, kproxy)
    # A controller's own configuration through its kproxy port: the values that name
    # addresses (listeners, advertised.listeners...) are withheld.
    leader = quorum_view(kproxy)["leader"]
    configs = quorum.java_tool(
        MAIN_CONFIG_COMMAND,
        "--bootstrap-controller",
        quorum.kproxy_controller(leader),
        "--describe",
        "--entity-type",
        "brokers",
        "--entity-name",
        str(leader),
        "--all",
        timeout=90,
    ).stdout
    assert "listeners=" in configs and "controller.quorum.bootstrap.servers" in configs, configs
    assert_only_kproxy_addresses(configs, quorum, kproxy, may_be_empty=True)


def test_killed_leader_is_replaced_through_kproxy(
    quorum: QuorumCluster, kproxy: KproxyProcess, traffic: Traffic
) -> None:
    before = quorum_view(kproxy)
    old_leader, old_epoch = before["leader"], before["epoch"]
    changes = kproxy.metric("kproxy_quorum_leader_changes_total", source_api="BeginQuorumEpoch")
    changes += kproxy.metric("kproxy_quorum_leader_changes_total", source_api="Fetch")
    changes += kproxy.metric("kproxy_quorum_leader_changes_total", source_api="Vote")
    acked_before = len(traffic.acked)
    quorum.stop_node(old_leader, kill=True)

    def new_leader() -> bool:
        view = quorum_view(kproxy)
        return view["leader"] not in (None, old_leader) and view["epoch"] > old_epoch

    wait_until(new_leader, 60, what=f"a leader other than {old_leader} seen by kproxy")
    after = quorum_view(kproxy)
    assert kproxy.metric("kproxy_quorum_leader") == after["leader"]
    total = sum(
        kproxy.metric("kproxy_quorum_leader_changes_total", source_api=api)
        for api in ("BeginQuorumEpoch", "Fetch", "Vote", "EndQuorumEpoch")
    )
    assert total > changes

    def leader_change_logged() -> bool:
        # The event log writes its files on a clock (kproxy.observe.events.DRAIN_SECONDS).
        return any(
            e["type"] == "leader_change"
            and e["topic"] == "__cluster_metadata"
            and e["new_leader"] == after["leader"]
            and e["new_epoch"] == after["epoch"]
            for e in read_event_files(kproxy.tmp / "events")
        )

    wait_until(leader_change_logged, 10, what="the new quorum leader in the event log")
    status = quorum.metadata_quorum("describe", "--status")
    assert f"LeaderId:               {after['leader']}" in status, status
    # The old leader comes back as a follower and catches up, through kproxy.
    quorum.start_node(old_leader)

    others = [n for n in VOTERS if n != old_leader]  # not the one starting again

    def follower_caught_up() -> bool:
        text = quorum.metadata_quorum("describe", "--replication", asking=others)
        row = next((li for li in text.splitlines() if li.split()[:1] == [str(old_leader)]), "")
        return "Follower" in row and row.split()[3] == "0"

    wait_until(follower_caught_up, 90, interval=1, what=f"controller {old_leader} following")
    # The brokers kept serving produce requests through kproxy all along.
    wait_until(
        lambda: len(traffic.acked) > acked_before + 50, 60, what="records acknowledged meanwhile"
    )
    assert not traffic.failed


def test_add_and_remove_a_controller_through_kproxy(
    quorum: QuorumCluster, kproxy: KproxyProcess
) -> None:
    """`add-controller` through kproxy; then a quiet minute with four voters and not one
    UpdateRaftVoter: what each controller advertises is what the voter set stores for it
    (VoterSet.voterNodeNeedsUpdate is false), since kproxy never rewrites what a
    controller says of itself (a rewrite of AddRaftVoter's listeners makes the new voter
    send UpdateRaftVoter over and over). Then `remove-controller`."""
    spare = quorum.nodes[SPARE]
    quorum.start_node(SPARE)

    def ask_voters(*args: str) -> str:
        # The three voters only: the spare, just started, would refuse the tool.
        return quorum.metadata_quorum(*args, asking=VOTERS)

    def observing() -> bool:
        return f'"id": {SPARE}' in ask_voters("describe", "--status")

    wait_until(observing, 90, interval=1, what=f"controller {SPARE} following as an observer")
    ask_voters("--command-config", str(spare.config_path), "add-controller")

    def voter_count(n: int) -> bool:
        return len(voters(ask_voters("describe", "--status"))) == n

    wait_until(lambda: voter_count(4), 90, interval=1, what="four voters")
    status = ask_voters("describe", "--status")
    assert voters(status)[SPARE] == [f"CONTROLLER://{quorum.kproxy_controller(SPARE)}"]
    assert_only_kproxy_addresses(status, quorum, kproxy)

    start = update_raft_voter_requests(kproxy)
    seen: list[float] = []

    def update_sent() -> bool:
        seen.append(update_raft_voter_requests(kproxy))
        return seen[-1] > start

    # A quiet minute: waiting for an UpdateRaftVoter must time out.
    with pytest.raises(TimeoutError):
        wait_until(update_sent, 60, interval=2, what="an UpdateRaftVoter")
    assert voters(ask_voters("describe", "--status"))[SPARE] == voters(status)[SPARE]

    ask_voters(
        "remove-controller", "--controller-id", str(SPARE),
        "--controller-directory-id", spare.directory_id,
    )  # fmt: skip
    wait_until(lambda: voter_count(3), 90, interval=1, what="three voters again")
    quorum.stop_node(SPARE)
    assert sorted(voters(ask_voters("describe", "--status"))) == list(VOTERS)


def test_no_record_lost_through_all_of_it(traffic: Traffic) -> None:
    traffic.finish()
    assert not traffic.failed, traffic.failed[:5]
    assert len(traffic.acked) > 100
    assert traffic.acked <= traffic.read_back()
