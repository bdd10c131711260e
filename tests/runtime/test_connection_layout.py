"""What every proxied connection's objects hold, pure Python or compiled.

Each connection, idle or not, keeps a client side, a broker side, a session with its
two frame readers and its in-flight table. None of them carries a per-instance
`__dict__` or `__weakref__` slot: the pure classes declare `__slots__`, and under mypyc
(tests/project/test_compiled_build.py runs this module against the compiled build) a class
gets both slots as soon as anything in its ancestry is a Python class (asyncio's
protocol classes, `typing.Generic`), 16 bytes on every connection. The event loops are
given protocols that subclass no asyncio class; tests/runtime/test_runtime_loops.py
serves clients through them on uvloop and the standard loop.
"""

from __future__ import annotations

import pytest

from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.frames import FrameReader
from kproxy.runtime.client import ClientConnection
from kproxy.runtime.upstream import UpstreamConnection
from kproxy.session.inflight import InFlight
from kproxy.session.session import ProxySession
from kproxy.session.streaming import StreamedResponse

PER_CONNECTION = (
    ClientConnection,
    UpstreamConnection,
    ProxySession,
    FrameReader,
    CorrelationTable,
    InFlight,  # one per request awaiting its response
    StreamedResponse,  # one per response forwarded as it arrives
)


@pytest.mark.parametrize("cls", PER_CONNECTION, ids=lambda cls: cls.__name__)
def test_no_per_instance_dict_or_weakref_slot(cls: type) -> None:
    assert cls.__dictoffset__ == 0, f"{cls.__name__} instances carry a __dict__ slot"
    assert cls.__weakrefoffset__ == 0, f"{cls.__name__} instances carry a __weakref__ slot"


def test_the_protocols_subclass_no_asyncio_class() -> None:
    # What keeps the compiled build's two protocol objects without those slots.
    for cls in (ClientConnection, UpstreamConnection):
        assert cls.__mro__[1:] == (object,), cls.__mro__
