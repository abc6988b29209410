"""The pure pre-download, pre-boot eligibility check: each refusal reason, by name."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_specgate.contracts.host import HostFacts, host_facts_from_dict
from pytest_specgate.engines.vllm.eligibility import REASON_CODES, eligibility
from pytest_specgate.engines.vllm.profile import DraftSpec, EngineImage, EngineProfile

GIB = 1024**3
IMAGE = EngineImage(
    reference="vllm/vllm-openai:v0.11.0",
    speculative_methods=frozenset({"draft_model", "ngram"}),
    kv_cache_dtypes=frozenset({"auto", "bf16", "fp8_e4m3"}),
    quantizations=frozenset({"awq", "fp8"}),
    min_compute_capability="8.0",
    platforms=frozenset({"linux/amd64", "linux/arm64"}),
)


def gpu(capability: str | None = "8.9", memory: int | None = 24 * GIB, **extra: object) -> dict[str, object]:
    return {"name": "NVIDIA L4", "memory_bytes": memory, "compute_capability": capability, **extra}


def host(*gpus: dict[str, object], **changes: object) -> HostFacts:
    return host_facts_from_dict(
        {"os": "linux", "arch": "x86_64", "memory_bytes": 64 * GIB, "gpus": list(gpus), **changes})


def profile(**changes: object) -> EngineProfile:
    base = EngineProfile(
        slug="org/model",
        weights_dir="/srv/models/model",
        weight_format="bfloat16",
        image=IMAGE,
        required_gpu_memory_bytes=16 * GIB,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_clean_profile_on_a_matching_host_is_eligible() -> None:
    verdict = eligibility(profile(), host(gpu()))

    assert verdict.eligible is True
    assert verdict.reasons == ()
    assert verdict.summary() == "eligible"


@pytest.mark.parametrize(
    ("the_profile", "the_host", "code", "detail"),
    [
        pytest.param(
            profile(image=replace(IMAGE, reference="vllm/vllm-openai:latest")), host(gpu()),
            "image_unpinned", "neither a digest nor a fixed tag", id="image-unpinned",
        ),
        pytest.param(
            profile(), host(gpu(), os="macos"),
            "host_os_unsupported", "host os is 'macos'", id="os",
        ),
        pytest.param(
            profile(image=replace(IMAGE, platforms=frozenset({"linux/amd64"}))),
            host(gpu(), arch="aarch64"),
            "image_platform_mismatch", "host is linux/arm64", id="platform",
        ),
        pytest.param(
            profile(tensor_parallel_size=2, gpu_indices=(0, 1)), host(gpu()),
            "tensor_parallel_exceeds_visible_gpus", "tensor parallel size 2 needs 2 GPUs; the host shows 1",
            id="tp-exceeds-gpus",
        ),
        pytest.param(
            profile(tensor_parallel_size=2, gpu_indices=(0,)), host(gpu(), gpu()),
            "gpu_selection_mismatch", "gpu_indices [0] must be 2 distinct indices", id="selection-count",
        ),
        pytest.param(
            profile(gpu_indices=(3,)), host(gpu(), gpu()),
            "gpu_selection_mismatch", "among the host's 2 GPUs", id="selection-outside",
        ),
        pytest.param(
            profile(), host(gpu(capability="7.5")),
            "compute_capability_below_image_minimum",
            "is SM 7.5; image vllm/vllm-openai:v0.11.0 needs at least 8.0",
            id="sm-too-low",
        ),
        pytest.param(
            profile(), host(gpu(capability=None)),
            "compute_capability_unknown", "reports no compute capability", id="sm-unknown",
        ),
        pytest.param(
            profile(), host(gpu(memory=None)),
            "gpu_memory_unknown", "memory is unknown", id="memory-unknown",
        ),
        pytest.param(
            profile(), host(gpu(memory=8 * GIB)),
            "gpu_memory_insufficient", f"has {8 * GIB} bytes; the profile needs {16 * GIB}",
            id="memory-short",
        ),
        pytest.param(
            profile(), host(gpu(memory=None, unified_memory=True), memory_bytes=None),
            "gpu_memory_unknown", "memory is unknown", id="unified-memory-host-unknown",
        ),
        pytest.param(
            profile(kv_cache_dtype="fp8_e5m2"), host(gpu()),
            "kv_cache_dtype_unsupported", "does not support KV cache dtype 'fp8_e5m2'", id="kv-not-in-image",
        ),
        pytest.param(
            profile(kv_cache_dtype="turboquant_3bit"), host(gpu()),
            "kv_cache_dtype_unsupported", "'turboquant_3bit' is not one of", id="kv-unknown-name",
        ),
        pytest.param(
            profile(draft=DraftSpec(method="eagle3", num_speculative_tokens=3, weights_dir="/d")),
            host(gpu()),
            "drafter_unsupported_by_image", "cannot serve drafter method 'eagle3'", id="drafter-method",
        ),
        pytest.param(
            profile(draft=DraftSpec(method="draft_model", num_speculative_tokens=3)), host(gpu()),
            "drafter_unsupported_by_image", "needs a draft weights directory", id="drafter-no-weights",
        ),
        pytest.param(
            profile(weight_format="autoround"), host(gpu()),
            "quantization_unresolvable", "autoround", id="quant-autoround",
        ),
        pytest.param(
            profile(weight_format="awq", compute_dtype="U8"), host(gpu()),
            "quantization_unresolvable", "need a compute dtype", id="quant-storage-dtype",
        ),
        pytest.param(
            profile(weight_format="gptq", compute_dtype="float16"), host(gpu()),
            "quantization_unresolvable", "cannot load gptq weights", id="quant-not-in-image",
        ),
        pytest.param(
            profile(weight_format="ggml"), host(gpu()),
            "quantization_unresolvable", "weight format 'ggml' is not one of", id="quant-unknown",
        ),
    ],
)
def test_each_refusal_is_named(
    the_profile: EngineProfile, the_host: HostFacts, code: str, detail: str
) -> None:
    verdict = eligibility(the_profile, the_host)

    assert verdict.eligible is False
    assert verdict.codes == (code,)
    assert detail in verdict.reasons[0].detail
    assert code in REASON_CODES


def test_unified_memory_gpu_falls_back_to_the_host_memory() -> None:
    gb10 = gpu(capability="12.1", memory=None, unified_memory=True)

    assert eligibility(profile(), host(gb10, arch="aarch64", memory_bytes=128 * GIB)).eligible
    short = eligibility(profile(), host(gb10, arch="aarch64", memory_bytes=8 * GIB))
    assert short.codes == ("gpu_memory_insufficient",)


def test_unknown_memory_is_not_zero_either() -> None:
    no_requirement = profile(required_gpu_memory_bytes=None)

    assert eligibility(no_requirement, host(gpu(memory=None))).eligible


def test_a_host_with_no_gpus_lists_every_reason_at_once() -> None:
    verdict = eligibility(
        profile(tensor_parallel_size=2, gpu_indices=(0, 1), kv_cache_dtype="fp8_e5m2"),
        host(os="macos", arch="arm64"),
    )

    assert verdict.codes == (
        "host_os_unsupported",
        "tensor_parallel_exceeds_visible_gpus",
        "kv_cache_dtype_unsupported",
    )
    assert verdict.summary().startswith("host_os_unsupported: ")


def test_missing_gpu_list_counts_as_no_gpus() -> None:
    no_gpu_list = host_facts_from_dict({"os": "linux", "arch": "x86_64", "memory_bytes": None})
    verdict = eligibility(profile(), no_gpu_list)

    assert verdict.codes == ("tensor_parallel_exceeds_visible_gpus",)
