"""The cost model on the mock engine, whose step and draft costs are configured and so known."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.backends import boot_function
from pytest_specgate.engines.mock.settings import DEFAULT_DRAFT, DEFAULT_TARGET
from pytest_specgate.measure import engine_arm, engine_telemetry, load_named_prompt_set, run_paired
from pytest_specgate.measure.cost_model import SPLIT_BY_PREFILL, explain_speedup

TARGET_STEP_MS = 100.0
"""Long enough that a loaded host's scheduling delay (2 to 3 ms a sleep at load 10 on 2 cores) stays
under the 5% the fit must meet; the test takes about 10 s."""
MAX_TOKENS = 16
COST_RATIO = 0.1
GAMMA = 4


def _config(*, draft: bool) -> EngineConfig:
    options = {"eos_one_in": 0, "alpha": 0.8, "isolation": "thread", "target_step_ms": TARGET_STEP_MS,
               "draft_step_ms": TARGET_STEP_MS * COST_RATIO}
    return EngineConfig(backend="mock", target=DEFAULT_TARGET, draft=DEFAULT_DRAFT if draft else None,
                        num_draft_tokens=GAMMA if draft else None, options=tuple(sorted(options.items())))


def test_the_fit_recovers_the_mocks_configured_step_and_draft_cost(tmp_path: Path) -> None:
    """Within 5%: every sleep overshoots by the host's scheduling delay, which both the step and
    the draft cost (a share of that step) carry."""
    prompts = load_named_prompt_set("spec028-code-iso8601-v1").prompts[:3]
    boot = boot_function("mock")
    with boot(_config(draft=False), tmp_path) as baseline, boot(_config(draft=True), tmp_path) as candidate:
        run = run_paired(engine_arm(baseline, max_tokens=MAX_TOKENS),
                         engine_arm(candidate, max_tokens=MAX_TOKENS), prompts,
                         rounds=1, warmup=1, candidate_telemetry=engine_telemetry(candidate))
    rate = None if run.acceptance is None else run.acceptance.acceptance_rate
    assert rate is not None
    costs = explain_speedup(run.pairs, GAMMA, rate, COST_RATIO, n_resamples=50).costs
    assert costs.target_step_s * 1000 == pytest.approx(TARGET_STEP_MS, rel=0.05)
    assert costs.draft_cost == pytest.approx(COST_RATIO, rel=0.05)
    # The mock verifies gamma + 1 tokens in one step, and its prefill costs nothing.
    assert costs.split_basis == SPLIT_BY_PREFILL
    assert costs.verify_cost == pytest.approx(1.0, abs=0.1)
    assert all(pair.baseline.sample.prompt_tokens for pair in run.pairs)
