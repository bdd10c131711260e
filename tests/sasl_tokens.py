"""SASL tokens as clients write them, for the tests of what kproxy reads from them."""

from __future__ import annotations

import base64
import json


def unsigned_jwt(claims: dict[str, object]) -> str:
    """An unsecured JWT (RFC 7519 6: "alg": "none"), as Kafka's unsecured login makes."""

    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."


def oauth_first(jwt: str, authzid: str = "") -> bytes:
    """RFC 7628 3.1's client initial response, as librdkafka and the Java client send it."""
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {jwt}\x01\x01".encode()
