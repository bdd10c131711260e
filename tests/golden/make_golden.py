"""Write the golden byte vectors in tests/golden/ (run once; the output is committed data).

    python -m tests.golden.make_golden [--check]

For each vector it writes ``<name>.hex`` (the whole wire frame: int32 size, header,
body) and ``<name>.rewritten.hex`` (the frame kproxy must produce with the fixed mapping
``golden_target`` of tests/golden/vectors.py). Neither file is produced by kproxy:

* Kafka 4.x versions are built with kio (an independent codec generated from the Kafka
  schemas): the original is kio's encoding of a message written out in
  tests/golden/kio_messages.py, the rewritten one kio's encoding of the same message with
  the mapping applied to kio's objects.
* Versions kio does not have (the ZooKeeper-era inter-broker messages removed in 4.0,
  ShareFetch v0, Produce v0-2...) and a few old client-facing versions are written by
  hand, field by field from the schema, with the mapped values put in by hand too
  (tests/golden/hand_frames.py).

``--check`` regenerates in memory and fails if a committed file differs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.golden.hand_frames import HAND_FRAMES, as_mapped, as_sent
from tests.golden.kio_messages import kio_vectors
from tests.golden.vectors import CLIENT_ID, CORRELATION_ID, golden_target
from tests.kio_expected import apply_mapping
from tests.kio_support import encode_request_frame, encode_response_frame

HERE = Path(__file__).resolve().parent


def hex_text(data: bytes) -> str:
    text = data.hex()
    return "\n".join(text[i : i + 64] for i in range(0, len(text), 64)) + "\n"


def build() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for name, (_key, _version, kind, msg) in kio_vectors().items():
        rewritten = apply_mapping(msg, lambda ep: golden_target(ep.node_id, ep.listener))
        if kind == "request":
            files[name] = encode_request_frame(msg, CORRELATION_ID, CLIENT_ID)
            files[name + ".rewritten"] = encode_request_frame(rewritten, CORRELATION_ID, CLIENT_ID)
        else:
            files[name] = encode_response_frame(msg, CORRELATION_ID)
            files[name + ".rewritten"] = encode_response_frame(rewritten, CORRELATION_ID)
    for name, make in HAND_FRAMES.items():
        files[name] = make(as_sent)
        files[name + ".rewritten"] = make(as_mapped)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a committed file differs")
    args = parser.parse_args()
    bad = 0
    files = build()
    for name, data in sorted(files.items()):
        path = HERE / f"{name}.hex"
        text = hex_text(data)
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"differs: {path.name}")
                bad += 1
        else:
            path.write_text(text)
    if not args.check:
        print(f"wrote {len(files)} files to {HERE}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
