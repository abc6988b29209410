"""On a real backend a canary whose pinned pair cannot be fetched runs the local pair, diagnostic only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from readme_run import REPO

sys.path.insert(0, str(REPO / "acceptance" / "spec028"))
import spec028_backends as backends

from pytest_specgate.fetching.weights import WeightVerificationError
from pytest_specgate.measure import model_pair


@pytest.fixture
def hub_unreachable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPECGATE_WEIGHTS_DIR", str(tmp_path / "weights"))


@pytest.mark.usefixtures("hub_unreachable")
@pytest.mark.parametrize("profile", [backends.MLX, backends.VLLM], ids=lambda p: p.backend)
def test_a_diagnostic_run_stands_in_the_local_pair_and_says_why(profile: backends.BackendProfile) -> None:
    pair = model_pair("AC-10")

    choice = backends.fetch_pinned_pair(profile, pair, diagnostic=True)
    plan = backends.ac10_plan(profile, pair, choice)

    record = choice.to_record()
    assert isinstance(record, dict) and record["qualifies"] is False
    pinned = f"{pair.target.repo_id} + {pair.draft.repo_id}"
    assert f"the pinned pair {pinned} could not be fetched" in record["why"]
    assert plan.candidate["target"] == "local-pair:target" and plan.candidate["draft"] == "local-pair:draft"
    assert plan.baseline["draft"] is None
    assert 0.05 < plan.cost_ratio < 0.1
    assert backends.ac11_plan(profile, pair, choice).candidate == plan.candidate


@pytest.mark.usefixtures("hub_unreachable")
def test_a_qualifying_run_never_falls_back_to_the_stand_in() -> None:
    with pytest.raises(WeightVerificationError):
        backends.fetch_pinned_pair(backends.MLX, model_pair("AC-10"), diagnostic=False)


def test_the_mock_simulates_the_pair_and_needs_no_weights() -> None:
    choice = backends.fetch_pinned_pair(backends.MOCK, model_pair("AC-10"), diagnostic=False)
    assert choice.to_record() == "none: the mock engine simulates the pair"
