"""The measurement toolkit against the real mock engine over HTTP (zero step times, fast)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_specgate.contracts.engine import Engine
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.backends import boot_function
from pytest_specgate.engines.mock.settings import DEFAULT_DRAFT, DEFAULT_TARGET
from pytest_specgate.measure import (
    arm_caching,
    engine_arm,
    engine_telemetry,
    load_named_prompt_set,
    run_paired,
)

PROMPTS = load_named_prompt_set("spec028-code-iso8601-v1").prompts[:3]


def _boot(tmp_path: Path, *, draft: bool, **options: object) -> Engine:
    settings = {"eos_one_in": 0, "alpha": 0.6, **options}
    config = EngineConfig(
        backend="mock",
        target=DEFAULT_TARGET,
        draft=DEFAULT_DRAFT if draft else None,
        num_draft_tokens=4 if draft else None,
        options=tuple(sorted(settings.items())),
    )
    return boot_function("mock")(config, tmp_path)


@pytest.fixture
def baseline(tmp_path: Path) -> Iterator[Engine]:
    with _boot(tmp_path, draft=False) as engine:
        yield engine


def test_paired_run_on_the_mock_is_identical_and_counts_acceptance(
    baseline: Engine, tmp_path: Path
) -> None:
    with _boot(tmp_path, draft=True) as candidate:
        run = run_paired(
            engine_arm(baseline, max_tokens=24),
            engine_arm(candidate, max_tokens=24),
            PROMPTS,
            rounds=2,
            warmup=1,
            candidate_telemetry=engine_telemetry(candidate),
        )
    assert run.identity().identical, run.identity().to_dict()
    assert all(pair.candidate.sample.output_tokens == 24 for pair in run.pairs)
    acceptance = run.acceptance
    assert acceptance is not None and acceptance.complete
    assert acceptance.drafted is not None and acceptance.drafted > 0
    assert acceptance.acceptance_rate is not None and 0 < acceptance.acceptance_rate < 1


def test_corrupt_speculation_is_reported_with_the_first_difference(
    baseline: Engine, tmp_path: Path
) -> None:
    with _boot(tmp_path, draft=True, violations=("corrupt-spec",)) as candidate:
        run = run_paired(
            engine_arm(baseline, max_tokens=24),
            engine_arm(candidate, max_tokens=24),
            PROMPTS[:1],
            rounds=1,
            warmup=0,
        )
    report = run.identity()
    assert not report.identical
    (mismatch,) = report.mismatches
    assert mismatch.first_difference is not None
    assert isinstance(mismatch.baseline_sequence, type(mismatch.candidate_sequence))
    assert mismatch.baseline_sequence != mismatch.candidate_sequence


def test_mock_arms_report_their_caching_and_a_paired_run_records_it(baseline: Engine, tmp_path: Path) -> None:
    with _boot(tmp_path, draft=True) as candidate:
        caching = (arm_caching(baseline), arm_caching(candidate))
        run = run_paired(engine_arm(baseline, max_tokens=8), engine_arm(candidate, max_tokens=8),
                         PROMPTS[:1], rounds=1, warmup=0, caching=caching)
    reported = {"prefix_caching": "off", "prompt_cache_size": None}
    assert run.to_dict()["caching"] == {"baseline": reported, "candidate": reported}
