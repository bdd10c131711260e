#!/usr/bin/env python3
"""Copy Apache Kafka's message schemas into the repository, reduced to what kproxy uses.

Input: the `clients/src/main/resources/common/message/` directory of an Apache Kafka
checkout. Output: one JSON file per message under `schemas/<name>/`, with the `//`
comments and every "about" text removed and nothing else changed (names, types,
versions, tags, defaults), so that `tools/generate_protocol.py` runs in a plain clone.

Usage:
    python tools/vendor_schemas.py KAFKA_MESSAGE_DIR schemas/apache-kafka-4.4
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def strip_comments(text: str) -> str:
    """Kafka's schema files carry a licence header and notes as `//` lines."""
    return _COMMENT.sub("", text)


def without_about(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_about(v) for k, v in value.items() if k != "about"}
    if isinstance(value, list):
        return [without_about(v) for v in value]
    return value


def reduce_schema(text: str) -> str:
    spec = without_about(json.loads(strip_comments(text)))
    return json.dumps(spec, indent=1) + "\n"


def vendor(source: Path, target: Path) -> list[str]:
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.json"):
        old.unlink()
    written = []
    for path in sorted(source.glob("*.json")):
        (target / path.name).write_text(reduce_schema(path.read_text()))
        written.append(path.name)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="Kafka's common/message directory")
    ap.add_argument("target", type=Path, help="for example schemas/apache-kafka-4.4")
    args = ap.parse_args(argv)
    written = vendor(args.source, args.target)
    print(f"wrote {len(written)} schemas to {args.target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
