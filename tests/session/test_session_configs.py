"""DescribeConfigs answers keep no address: values that name listeners, the controller
quorum or ZooKeeper are withheld (null, marked sensitive, as a broker shows a password),
every other byte is kept. Frames are built and read back with kio."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kproxy.protocol.config_addresses import names_an_address
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    kio_message_class,
    kio_versions,
)
from tests.session.frames import client, joined, session, upstream

VERSIONS = list(kio_versions(32, "response"))
ADDRESSES = {
    "listeners": "PLAINTEXT://broker-1.internal:9092,CONTROLLER://broker-1.internal:9093",
    "advertised.listeners": "PLAINTEXT://broker-1.internal:9092",
    "controller.quorum.voters": "1@ctl-1.internal:9093,2@ctl-2.internal:9093",
    "controller.quorum.bootstrap.servers": "ctl-1.internal:9093",
    "remote.log.metadata.manager.bootstrap.servers": "broker-1.internal:9092",
    "listener.name.internal.listeners": "INTERNAL://10.0.0.5:9094",
}
HARMLESS = {"log.retention.ms": "604800000", "num.partitions": "3", "broker.rack": None}


def describe_request(version: int, corr: int) -> bytes:
    cls = kio_message_class(32, version, "request")
    assert cls is not None
    mod = __import__(cls.__module__, fromlist=["DescribeConfigsResource"])
    resource = mod.DescribeConfigsResource(
        resource_type=4, resource_name="1", configuration_keys=None
    )
    fields = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {"resources": (resource,)}
    if "include_synonyms" in fields:
        kwargs["include_synonyms"] = True
    if "include_documentation" in fields:
        kwargs["include_documentation"] = False
    return encode_request_frame(cls(**kwargs), corr, "admin")


def redacted_view(msg: Any) -> Any:
    """What a client must see: address values null and sensitive, the rest as it was."""

    def entry(e: Any) -> Any:
        if e.value is None or not names_an_address(e.name):
            changes: dict[str, Any] = {}
        else:
            changes = {"value": None}
            if hasattr(e, "is_sensitive"):
                changes["is_sensitive"] = True
        if hasattr(e, "synonyms"):
            changes["synonyms"] = tuple(entry(s) for s in e.synonyms)
        return dataclasses.replace(e, **changes)

    return dataclasses.replace(
        msg,
        results=tuple(
            dataclasses.replace(r, configs=tuple(entry(c) for c in r.configs)) for r in msg.results
        ),
    )


def through_kproxy(version: int, answer: Any) -> tuple[Any, int]:
    cls = type(answer)
    s = session()
    client(s, describe_request(version, 5))
    step = upstream(s, encode_response_frame(answer, 5))
    assert step.close is None, step.close
    corr, got = decode_response_frame(cls, joined(step.to_client))
    assert corr == 5
    return got, sum(count for _, count in step.redacted)


@pytest.mark.parametrize("version", VERSIONS)
def test_broker_addresses_in_configs_are_withheld(version: int) -> None:
    cls = kio_message_class(32, version, "response")
    assert cls is not None
    mod = __import__(cls.__module__, fromlist=["x"])
    configs = []
    for name, value in {**ADDRESSES, **HARMLESS}.items():
        synonyms = (
            (mod.DescribeConfigsSynonym(name=name, value=value, source=4),)
            if hasattr(mod, "DescribeConfigsSynonym")
            else ()
        )
        fields = {f.name for f in dataclasses.fields(mod.DescribeConfigsResourceResult)}
        extra: dict[str, Any] = {}
        if "synonyms" in fields:
            extra["synonyms"] = synonyms
        if "config_source" in fields:
            extra["config_source"] = 4
        if "config_type" in fields:
            extra.update(config_type=2, documentation=None)
        configs.append(
            mod.DescribeConfigsResourceResult(
                name=name, value=value, read_only=True, is_sensitive=False, **extra
            )
        )
    answer = cls(
        throttle_time=datetime.timedelta(0),
        results=(
            mod.DescribeConfigsResult(
                error_code=ErrorCode.none,
                error_message=None,
                resource_type=4,
                resource_name="1",
                configs=tuple(configs),
            ),
        ),
    )
    got, count = through_kproxy(version, answer)
    assert got == redacted_view(answer)
    shown = {c.name: c for c in got.results[0].configs}
    for name in ADDRESSES:
        assert shown[name].value is None and shown[name].is_sensitive
    assert shown["log.retention.ms"].value == "604800000"
    assert not shown["log.retention.ms"].is_sensitive
    per_entry = 2 if version >= 1 else 1  # the entry and its synonym
    assert count == len(ADDRESSES) * per_entry
    assert ".internal:" not in repr(got) and "10.0.0.5" not in repr(got)


@pytest.mark.parametrize("version", VERSIONS)
def test_random_describe_configs_answers(version: int) -> None:
    cls = kio_message_class(32, version, "response")
    assert cls is not None
    names = st.sampled_from([*ADDRESSES, *HARMLESS, "ssl.keystore.password"])

    @settings(max_examples=50, deadline=None)
    @given(message_strategy(cls), st.data())
    def check(answer: Any, data: st.DataObject) -> None:
        # Names drawn from a list that mixes address-bearing and harmless ones.
        def named(e: Any) -> Any:
            changes: dict[str, Any] = {"name": data.draw(names)}
            if hasattr(e, "synonyms"):
                changes["synonyms"] = tuple(named(s) for s in e.synonyms)
            return dataclasses.replace(e, **changes)

        answer = dataclasses.replace(
            answer,
            results=tuple(
                dataclasses.replace(r, configs=tuple(named(c) for c in r.configs))
                for r in answer.results
            ),
        )
        got, _ = through_kproxy(version, answer)
        assert got == redacted_view(answer)

    check()


def test_names_that_carry_addresses() -> None:
    for name in ADDRESSES:
        assert names_an_address(name), name
    for name in ("log.retention.ms", "listener.security.protocol.map", "broker.rack"):
        assert not names_an_address(name), name
