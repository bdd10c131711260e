"""The Tansu upstream: in-memory brokers, one advertising itself and one advertising
haproxy's port (and paired paths' own)."""

from __future__ import annotations

from pathlib import Path

from bench.peers import (
    AdvertisedTansu,
    HaproxyPeer,
    Unavailable,
)
from bench.upstreams import HAPROXY_SIDE, Upstream
from tests.peers.net import LOOPBACK, free_ports
from tests.peers.tansu import TANSU_NODE_ID, TansuBroker


def _admin_create(bootstrap: str, topic: str, partitions: int, timeout: float = 30) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=timeout)
    futures[topic].result(timeout=timeout)


class TansuUpstream(Upstream):
    """Tansu brokers: ``main`` advertises itself, the haproxy side advertises haproxy's
    port, and each of ``own_broker_paths`` has one of its own. :meth:`reset` restarts
    them on the same ports (in-memory storage: this frees what the previous round
    wrote)."""

    name = "tansu"
    node_ids = [TANSU_NODE_ID]

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.main_port, self.hap_broker_port, self.hap_port = free_ports(3)
        self.main: TansuBroker | None = None
        self.hap_broker: AdvertisedTansu | None = None
        #: A port, then a broker, for each of ``own_broker_paths`` (given at start()).
        self.path_ports: dict[str, int] = {}
        self.path_brokers: dict[str, TansuBroker] = {}

    def side(self, path: str) -> str:
        return path if path in self.path_ports else super().side(path)

    def sides(self) -> list[str]:
        return super().sides() + list(self.path_brokers)

    def proxy_target_of(self, path: str) -> str:
        port = self.path_ports.get(path)
        return f"{LOOPBACK}:{port}" if port is not None else super().proxy_target_of(path)

    def fill_bootstrap(self, side: str) -> str:
        if side in self.path_ports:
            return self.proxy_target_of(side)
        return super().fill_bootstrap(side)

    def direct_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.main_port}"

    def _behind(self, side: str) -> tuple[int, TansuBroker | None]:
        """The port of the broker behind ``side``, and that broker (None if it is not
        running: haproxy's side when haproxy did not start)."""
        own = {path: (port, self.path_brokers.get(path)) for path, port in self.path_ports.items()}
        return {
            HAPROXY_SIDE: (self.hap_broker_port, self.hap_broker),
            **own,
        }.get(side, (self.main_port, self.main))

    def broker_pid(self, side: str) -> int | None:
        _port, broker = self._behind(side)
        process = broker.process if broker is not None else None
        return process.pid if process is not None else None

    def _brokers(self) -> list[TansuBroker]:
        found = [b for b in (self.main, self.hap_broker) if b is not None]
        return found + list(self.path_brokers.values())

    def _start_brokers(self, with_haproxy_side: bool) -> None:
        self.main = TansuBroker(self.main_port, workdir=self.workdir / "tansu-main").start()
        if with_haproxy_side:
            self.hap_broker = AdvertisedTansu(
                self.hap_port, port=self.hap_broker_port, workdir=self.workdir / "tansu-hap"
            ).start()
        self.path_brokers = {
            path: TansuBroker(port, workdir=self.workdir / f"tansu-{path}").start()
            for path, port in self.path_ports.items()
        }

    def start(self) -> None:
        self.path_ports = dict(
            zip(self.own_broker_paths, free_ports(len(self.own_broker_paths)), strict=True)
        )
        self._start_brokers(True)
        assert self.hap_broker is not None
        try:
            self.haproxy = HaproxyPeer(
                "haproxy-tansu", self.hap_broker.bootstrap, self.workdir, port=self.hap_port
            ).start()
        except (Unavailable, RuntimeError, TimeoutError) as exc:
            self.haproxy_error = str(exc)
            self.hap_broker.stop()
            self.hap_broker = None

    def reset(self) -> None:
        for broker in self._brokers():
            broker.stop(timeout=2.0)
        self._start_brokers(self.haproxy is not None)

    def stop(self) -> None:
        self.stop_forwarders()
        for broker in self._brokers():
            broker.stop(timeout=2.0)

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        port, _broker = self._behind(side)
        _admin_create(f"{LOOPBACK}:{port}", topic, partitions)
