"""Repository-wide test settings.

This file is loaded by every run from the repository, including the README's
first command, which installs the package without its dev extra: it may import
only the package's own dependencies. Dev-only settings (hypothesis profiles)
live in ``tests/conftest.py``.
"""

from __future__ import annotations

# pytester's in-process runs unload every module first imported inside them. Were
# httpx or httpcore (which httpx imports lazily) first imported there, later tests
# would hold two copies of their exception classes, and ``except httpx.TransportError``
# would miss real transport errors.
import httpcore  # noqa: F401
import httpx  # noqa: F401
