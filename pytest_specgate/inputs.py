"""Where the validation kit used to live; it is :mod:`pytest_specgate.contracts.validation` now.

Kept so every ``from pytest_specgate.inputs import ...`` keeps working.
"""

from __future__ import annotations

from pytest_specgate.contracts.validation import *  # noqa: F403
from pytest_specgate.contracts.validation import __all__ as __all__
