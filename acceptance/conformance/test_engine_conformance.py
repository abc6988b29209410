"""The engine-conformance spec, collected from the repository.

The spec ships inside the package (``pytest --pyargs pytest_specgate.conformance
--specgate-engine=NAME`` runs it from an installed plugin); this file collects the same
tests here, so ``pytest acceptance/conformance --specgate-engine=NAME`` runs them too.
"""

import pytest

pytest.register_assert_rewrite("pytest_specgate.conformance")

from pytest_specgate.conformance.test_engine_conformance import *  # noqa: E402, F403
