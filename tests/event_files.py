"""kproxy's event log files as a test reads them (names, timestamps, lines)."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
NAME_RE = re.compile(r"^events-(\d{8}T\d{6})-(.+)-(\d{6})\.jsonl$")
T0 = 1_795_000_000.25  # 2026-11-18T11:06:40.25Z


def stamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y%m%dT%H%M%S")


def read_lines(directory: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(directory.glob("events-*.jsonl")):
        with path.open(encoding="utf-8") as f:
            out.extend(json.loads(line) for line in f)
    return out
