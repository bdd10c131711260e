"""Keep CPython's cyclic garbage collector off the request path.

Reference counting frees what a request allocates as soon as it is answered, but the
collector still counts every container allocated and runs a young collection each 700
net allocations; every tenth of those runs a middle one, and now and then a full one
walks every object alive. After kproxy's imports (pydantic, aiohttp, prometheus-client)
that is about 60,000 objects, about 30 ms on the benchmark machine here: a pause every
connection waits through, in the tail of the round-trip latency.

Once kproxy listens, `settle_heap()` collects once and freezes what survived
(`gc.freeze()`: those objects move to a permanent generation no collection walks again),
then raises the young threshold so that a collection runs per several hundred requests,
not per few. The collector stays on: a reference cycle (an exception holding its
traceback's frames, say) is still freed.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger("kproxy.heap")

# Young collections: one per this many net container allocations (CPython: 700). A
# small request costs kproxy a few dozen; the middle and old thresholds stay CPython's.
YOUNG_THRESHOLD = 20_000


def settle_heap() -> int:
    """Collect, freeze the survivors, raise the young threshold; returns how many objects
    were frozen."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    frozen = gc.get_freeze_count()
    log.debug("heap settled: %d objects frozen, young threshold %d", frozen, YOUNG_THRESHOLD)
    return frozen
