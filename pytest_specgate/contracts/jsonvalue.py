"""The type of a JSON document in memory, for every layer that reads or writes one."""

from __future__ import annotations

from typing import Any

__all__ = ["JsonValue"]

JsonValue = Any
"""A value made only of dict (str keys), list, str, int, float, bool and None."""
