"""Keep the objects kproxy's startup made out of the cyclic garbage collector's way.

Reference counting frees what a request allocates as soon as it is answered, so
CPython's collector runs seldom in kproxy: during a latency benchmark round (20,000
small produce round trips) none of its collections ran at all, and its young-generation
count crept up by about 300 (`python_gc_collections_total` on /metrics counts them).
What does run, now and then, is a full collection, and that walks every object alive:
after kproxy's imports (pydantic, aiohttp, prometheus-client) about 60,000, about 30 ms
on the benchmark machine here, a pause every connection waits through.

Once kproxy listens, `settle_heap()` collects once and freezes what survived
(`gc.freeze()`: those objects move to a permanent generation no collection walks
again), so a full collection walks only what was made since. The collector's
thresholds stay CPython's and it stays on: a reference cycle (an exception holding its
traceback's frames, say) is still freed as soon as before.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger("kproxy.heap")


def settle_heap() -> int:
    """Collect, then freeze the survivors; returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("heap settled: %d startup objects frozen", frozen)
    return frozen
