"""pytest-specgate: executable acceptance criteria for LLM-serving features."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
