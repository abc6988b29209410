"""Typed values every layer hands to the next: wire names, the validation kit, the input error.

Nothing here does I/O or imports pytest, so the mock engine, qualification, the
plugin and the CLI can all import it without cost, and a name typed here is the
only place that name is spelled.
"""

from __future__ import annotations
