"""Checks the mlx backend makes before any process starts, and the from_draft accounting.

The tokenizer comparison itself is shared with vllm and tested in
tests/engines/test_tokenizer_match.py; here only that plan_boot applies it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.mlx import (
    check_capacity,
    count_draft_acceptance,
    estimate_memory,
    host_memory_bytes,
    plan_boot,
)
from pytest_specgate.fetching.tiny_models import TinyModelPair, tiny_model_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("tiny-cache"))


def _plan(target: Path, draft: Path, workdir: Path) -> None:
    config = EngineConfig(backend="mlx", target=str(target), draft=str(draft))
    plan_boot(config.with_options(memory_limit_bytes=10**12), workdir)


def test_plan_boot_refuses_a_draft_with_another_tokenizer(pair: TinyModelPair, tmp_path: Path) -> None:
    _plan(pair.target, pair.draft, tmp_path)
    with pytest.raises(EngineStartupRefused) as refused:
        _plan(pair.target, pair.permuted_draft, tmp_path)
    assert refused.value.code == "draft_model_tokenizer_mismatch"
    assert "target has 512 tokens, draft 512" in refused.value.message


def test_plan_boot_refuses_a_draft_whose_tokenizer_is_unreadable(pair: TinyModelPair, tmp_path: Path) -> None:
    draft = tmp_path / "bare"
    shutil.copytree(pair.draft, draft)
    (draft / "tokenizer.json").unlink()
    with pytest.raises(EngineStartupRefused, match=r"cannot verify the draft tokenizer") as refused:
        _plan(pair.target, draft, tmp_path)
    assert refused.value.code == "draft_model_tokenizer_unverifiable"


def test_memory_estimate_counts_weights_and_kv_cache(pair: TinyModelPair) -> None:
    estimate = estimate_memory(pair.target, context_tokens=100)
    assert estimate.weights_bytes == (pair.target / "model.safetensors").stat().st_size
    layers, kv_heads, head_dim, float32 = 2, 2, 32, 4
    assert estimate.kv_cache_bytes == 2 * layers * kv_heads * head_dim * 100 * float32
    assert estimate.total_bytes == estimate.weights_bytes + estimate.kv_cache_bytes


def test_pair_that_fits_passes_and_one_that_does_not_is_refused(pair: TinyModelPair) -> None:
    target, draft = check_capacity(
        pair.target, pair.draft, context_tokens=64, limit_bytes=10**9, limit_source="test"
    )
    needed = target.total_bytes + draft.total_bytes
    check_capacity(pair.target, pair.draft, context_tokens=64, limit_bytes=needed, limit_source="t")
    with pytest.raises(EngineStartupRefused) as refused:
        check_capacity(
            pair.target, pair.draft, context_tokens=64, limit_bytes=needed - 1, limit_source="opt"
        )
    assert refused.value.code == "draft_model_capacity_shortfall"
    assert f"= {needed} B, more than the {needed - 1} B available (opt)" in str(refused.value)


def test_unknown_memory_is_refused_not_assumed(pair: TinyModelPair) -> None:
    with pytest.raises(EngineStartupRefused, match=r"host memory is unknown \(no probe\)"):
        check_capacity(
            pair.target, pair.draft, context_tokens=64, limit_bytes=None, limit_source="no probe"
        )


def test_a_checkpoint_without_architecture_is_refused(pair: TinyModelPair, tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(pair.draft, model)
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    with pytest.raises(EngineStartupRefused, match="cannot estimate the memory"):
        estimate_memory(model, context_tokens=64)


def test_host_memory_is_probed() -> None:
    size, source = host_memory_bytes()
    assert source
    if Path("/proc/meminfo").is_file():
        assert isinstance(size, int) and size > 0
        assert source == "/proc/meminfo MemAvailable"


@pytest.mark.parametrize(
    ("flags", "max_tokens", "expected"),
    [
        ([True, True, True, False] * 2, 8, (6, 6)),
        ([True, False, False, True, True, False], 6, (9, 3)),
        ([False, False], 2, (3, 0)),
        ([True, True, True, False, True], 5, (4, 4)),
        ([], 4, (0, 0)),
    ],
)
def test_draft_acceptance_is_reconstructed_from_flags(
    flags: list[bool], max_tokens: int, expected: tuple[int, int]
) -> None:
    assert count_draft_acceptance(flags, num_draft_tokens=3, max_tokens=max_tokens) == expected
