"""Settings for the plugin's own test suite (needs the dev extra).

Hypothesis deadlines are off: these machines are shared and noisy, and a
property test must fail on a wrong answer, never on a slow one. Select a
profile with ``HYPOTHESIS_PROFILE=soak`` for the long redaction soak; ``mutation`` (few examples)
is what ``tox -e mutation`` runs each mutant with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("soak", deadline=None, max_examples=10_000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("mutation", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


SUITE_CHECKOUT = Path(__file__).resolve().parents[1]
"""This checkout: the plugin and this suite, imported by every in-process pytester run."""
FOREIGN_HARNESS_MARKER = "foreign_harness"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{FOREIGN_HARNESS_MARKER}: in-process pytester runs see this checkout's own modules as what they "
        "are, code from outside the project under test (run provenance tests)",
    )
    config.addinivalue_line(
        "markers", "provenance_matrix: real pytest runs in real venvs, honest setups and hidden-code attacks "
        "(run alone: pytest -m provenance_matrix)")


@pytest.fixture(autouse=True)
def _this_checkout_is_the_harness(request: pytest.FixtureRequest,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-process pytester run shares this process's modules: the plugin and this suite, all
    imported from this checkout, outside the project under test and no installed distribution.
    Run provenance rightly calls them foreign; here they are the harness under test, so unless
    a test asks for the truth (``@pytest.mark.foreign_harness``), they are left out."""
    if request.node.get_closest_marker(FOREIGN_HARNESS_MARKER) is not None:
        return
    from pytest_specgate.evidence import _run_provenance

    real = _run_provenance.foreign_modules

    def outside_this_checkout(modules: Mapping[str, ModuleType | None],
                              locations: _run_provenance.Locations) -> dict[str, str]:
        kept = {name: module for name, module in modules.items()
                if not str(getattr(module, "__file__", None) or "").startswith(f"{SUITE_CHECKOUT}/")}
        return real(kept, locations)

    monkeypatch.setattr(_run_provenance, "foreign_modules", outside_this_checkout)
