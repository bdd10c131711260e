"""`kproxy demo --duration 20` exits 0, and another client can use the address it prints:
on the port asked for, and with the command it prints, pasted as it is."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import threading
import uuid

import pytest

from tests.peers.net import free_port

pytestmark = pytest.mark.peers


def test_demo_serves_another_client_and_exits_zero() -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    port = free_port()
    argv = ["demo", "--duration", "20", "--leader-interval", "2", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kproxy", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        bootstrap = None
        command = None
        for line in proc.stdout:  # the demo prints its address before any traffic
            lines.append(line)
            found = re.search(r"bootstrap address (\S+)", line)
            if found:
                bootstrap = found.group(1)
            tried = re.search(r"try a client of your own: (.*)$", line)
            if tried:
                command = tried.group(1)
                break
        assert bootstrap == f"127.0.0.1:{port}", "".join(lines)
        assert command is not None, "".join(lines)
        rest: list[str] = []
        drain = threading.Thread(target=lambda: rest.extend(proc.stdout or []), daemon=True)
        drain.start()
        # The printed command, pasted as it is (on this interpreter: python3 may be another).
        pasted = shlex.split(command)
        assert pasted[0] == "python3"
        tried_out = subprocess.run(
            [sys.executable, *pasted[1:]], capture_output=True, text=True, timeout=60
        )
        assert tried_out.returncode == 0, tried_out.stderr
        assert re.match(r"[1-9]\d* messages read through kproxy", tried_out.stdout), tried_out

        marker = uuid.uuid4().hex.encode()
        # kafka-python pinned to 2.3: the mock cluster serves ApiVersions up to v2 (docs/peers.md).
        producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=(2, 3), acks="all")
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, api_version=(2, 3), enable_auto_commit=False
        )
        partitions = [TopicPartition("kproxy-demo", p) for p in range(6)]
        consumer.assign(partitions)
        consumer.seek_to_end()
        for p in range(6):
            consumer.position(TopicPartition("kproxy-demo", p))
        for i in range(60):
            producer.send("kproxy-demo", value=marker + b"-%d" % i).get(30)
        producer.close()
        got: set[bytes] = set()
        for _ in range(60):
            for records in consumer.poll(1000, max_records=100_000).values():
                got.update(r.value for r in records if r.value.startswith(marker))
            if len(got) == 60:
                break
        consumer.close()
        assert len(got) == 60

        assert proc.wait(90) == 0, "".join(lines + rest)
        drain.join(10)
        output = "".join(lines + rest)
        assert "kproxy demo: done" in output
        assert re.search(r"kproxy saw \d+ leader changes", output)
        # The mock's byte after each Metadata v13 response, explained and then warned of
        assert "sends a byte after each Metadata v13 response" in output
        assert "carried 1 byte(s) after its message, kept from the client" in output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
