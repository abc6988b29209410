"""The verdict of one measurement against its ``at_least`` / ``at_most`` bounds.

The recorder judges a measurement with it while the test runs, and the evidence
records and the gate judge the recorded figure again with the same function.
"""

from __future__ import annotations

import math

__all__ = ["threshold_verdict"]


def threshold_verdict(value: float, at_least: float | None, at_most: float | None) -> str | None:
    """Why ``value`` misses its bounds, or None when it meets them (NaN meets no bound)."""
    if at_least is None and at_most is None:
        return None
    if math.isnan(value):
        return "is not a number"
    if at_least is not None and not value >= at_least:
        return f"is below at_least={at_least:g}"
    if at_most is not None and not value <= at_most:
        return f"is above at_most={at_most:g}"
    return None


