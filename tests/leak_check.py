"""The leak check on a client's own log: librdkafka's log lines collected through the
client's `logger`, and the assertion that they never name a broker's own address or a
port that is not one of kproxy's listeners.
"""

from __future__ import annotations

import logging
import re

from tests.kproxy_process import KproxyProcess


class LogLines(logging.Handler):
    """Collects librdkafka's log lines (delivered through the client's `logger`)."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.logger = logging.getLogger(f"rdkafka.{name}")
        self.logger.handlers = [self]
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def assert_no_leak(logs: list[LogLines], kp: KproxyProcess) -> None:
    ours = set(kp.listener_ports().values())
    for log in logs:
        text = "\n".join(log.lines)
        assert ".invalid" not in text, "a broker's own address reached a client"
        dialled = {int(p) for p in re.findall(r"Connecting to ipv4#127\.0\.0\.1:(\d+)", text)}
        assert dialled, "no connection seen in the client log"
        assert dialled <= ours, f"client dialled {dialled - ours}, not kproxy ports {ours}"
