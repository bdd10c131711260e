"""The KRaft controller quorum kproxy carries (`quorum:`), KIP-853.

Each controller gets a kproxy port of its own and advertises kproxy's address for
itself (``advertised.listeners=CONTROLLER://<listeners.advertised_host>:<port>``), so
the voter set stored in the metadata log names kproxy, and every controller-to-
controller and broker-to-controller connection goes through kproxy. kproxy dials the
controller at `address` (through `cluster.dial_overrides`, like a broker). The reasoning,
and why nothing here may rewrite what a controller says of itself, is in
docs/kraft-quorum.md.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from kproxy.config.section import Section
from kproxy.config.types import BrokerAddress, NodeIdKey, NodePort, fail


class ControllerSettings(Section):
    """One controller of the quorum."""

    port: NodePort = Field(
        description="kproxy's port for this controller: what the controller advertises for "
        "its controller listener, and what --initial-controllers, "
        "controller.quorum.bootstrap.servers and --bootstrap-controller name"
    )
    address: BrokerAddress = Field(
        description="the controller's own listener, host:port, as kproxy dials it "
        "(cluster.dial_overrides apply); never told to anyone"
    )


class QuorumSettings(Section):
    """Controller id -> its kproxy port and real address (empty: no quorum carried)."""

    controllers: dict[NodeIdKey, ControllerSettings] = Field(
        default_factory=dict,
        description="controller id -> {port, address}; each port serves the controller "
        "plane (Vote, BeginQuorumEpoch, Fetch of the metadata log, BrokerRegistration...)",
        json_schema_extra={"propertyNames": {"pattern": "^[0-9]+$"}},
    )

    @model_validator(mode="after")
    def _distinct_ports(self) -> QuorumSettings:
        used: dict[int, int] = {}
        for node_id, controller in self.controllers.items():
            other = used.get(controller.port)
            if other is not None:
                raise fail(
                    f"controllers.{node_id}.port",
                    f"port {controller.port} is also controller {other}'s",
                )
            used[controller.port] = node_id
        return self

    def ports(self) -> dict[int, int]:
        """kproxy port -> controller id."""
        return {c.port: node_id for node_id, c in self.controllers.items()}
