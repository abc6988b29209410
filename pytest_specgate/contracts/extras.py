"""Optional features and the extra that installs each: one wording for a missing dependency.

The base install holds what a spec author's first run needs (the mock engine, measurements,
plots, evidence, the gate without signatures); signing, change-point history, tiny models, the
hub and the real engines are extras. A feature whose extra is missing stops with one line naming
it, never with an ImportError traceback.
"""

from __future__ import annotations

from pytest_specgate.contracts.errors import SpecgateInputError

__all__ = ["MissingExtraError", "missing_extra"]


class MissingExtraError(SpecgateInputError):
    """A feature was asked for whose optional dependencies are not installed."""


def missing_extra(feature: str, extra: str, error: ImportError) -> MissingExtraError:
    """``<feature> needs <module> (not installed): pip install 'pytest-specgate[<extra>]'``."""
    module = error.name.partition(".")[0] if error.name else str(error)
    return MissingExtraError(
        f"{feature} needs {module} (not installed): pip install 'pytest-specgate[{extra}]'")
