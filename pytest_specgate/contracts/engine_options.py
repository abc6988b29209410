"""The keywords each built-in backend takes in ``@pytest.mark.engine(...)`` and ``--specgate-engine-option``.

The backend list (``selection.backends``) checks markers against them at collection;
each backend reads its options under these names when it boots.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ENDPOINT_OPTIONS", "MLX_OPTIONS", "MOCK_OPTIONS", "VLLM_OPTIONS"]

MOCK_OPTIONS: Final = frozenset({
    "alpha", "target_step_ms", "draft_step_ms", "vocab", "draft_vocab", "seed", "eos_one_in",
    "memory_budget_gb", "target_size_gb", "draft_size_gb", "kv_cache_gb", "gated_features", "faults",
    "violations", "roll_period_s", "default_max_tokens", "max_model_len", "speculation_support",
    "isolation", "boot_timeout_s", "request_timeout_s",
})
MLX_OPTIONS: Final = frozenset({
    "boot_timeout_s", "context_tokens", "max_tokens", "memory_limit_bytes", "model_cache",
    "prompt_cache_size", "request_timeout_s",
})
VLLM_OPTIONS: Final = frozenset({
    "mode", "boot_timeout_s", "model_cache", "speculative_method", "max_model_len",
    "gpu_memory_utilization",
    # process mode
    "python", "dtype", "enforce_eager", "prompt_lookup_max", "prompt_lookup_min",
    # compose mode
    "image", "weights_dir", "gpu_indices", "weight_format", "compute_dtype", "kv_cache_dtype",
    "tensor_parallel_size", "max_num_seqs", "trust_remote_code", "required_gpu_memory_bytes",
    "image_platforms", "image_min_compute_capability", "host_facts",
})
ENDPOINT_OPTIONS: Final = frozenset({
    "url", "health_path", "health_deadline_s", "api_key", "request_timeout_s",
})


