"""Hypothesis profiles for the property tests, chosen with env HYPOTHESIS_PROFILE.

* ``ci``: 200 examples per test (each test is one (api, kind, version)), no deadline.
* ``dev`` (the default): 25 examples, for a quick local run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile("ci", max_examples=200, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("dev", max_examples=25, **_COMMON)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
