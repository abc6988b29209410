"""Settings for the plugin's own test suite (needs the dev extra).

Hypothesis deadlines are off: these machines are shared and noisy, and a
property test must fail on a wrong answer, never on a slow one. Select a
profile with ``HYPOTHESIS_PROFILE=soak`` for the long redaction soak.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("soak", deadline=None, max_examples=10_000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
