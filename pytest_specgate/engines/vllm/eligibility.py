"""Refuse, before any download or boot, a vLLM profile this host cannot run.

A refusal after a multi-GB download or a minutes-long boot wastes the run; a
refusal with no reason sends the user guessing. So this is a pure function of the
profile and the host facts, checked first, and every failing clause is named.
Unknown facts fail closed: a GPU whose memory or compute capability could not be
read is never treated as big enough or new enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pytest_specgate.contracts.host import GpuFacts, HostFacts
from pytest_specgate.engines.vllm.profile import (
    EngineProfile,
    image_is_pinned,
    kv_cache_dtype_arg,
    quantization_args,
)
from pytest_specgate.selection.hardware import capability_at_least, gpu_memory_bytes

__all__ = [
    "REASON_CODES",
    "EligibilityReason",
    "EligibilityVerdict",
    "eligibility",
]

REASON_CODES: Final = (
    "image_unpinned",
    "host_os_unsupported",
    "image_platform_mismatch",
    "tensor_parallel_exceeds_visible_gpus",
    "gpu_selection_mismatch",
    "compute_capability_below_image_minimum",
    "compute_capability_unknown",
    "gpu_memory_unknown",
    "gpu_memory_insufficient",
    "kv_cache_dtype_unsupported",
    "drafter_unsupported_by_image",
    "quantization_unresolvable",
)
_PLATFORM_ARCH: Final = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class EligibilityReason:
    """One failed clause: a stable ``code`` and a sentence with the figures."""

    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


@dataclass(frozen=True)
class EligibilityVerdict:
    eligible: bool
    reasons: tuple[EligibilityReason, ...]

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(reason.code for reason in self.reasons)

    def summary(self) -> str:
        if self.eligible:
            return "eligible"
        return "; ".join(str(reason) for reason in self.reasons)


def _host_reasons(profile: EngineProfile, host: HostFacts) -> list[EligibilityReason]:
    reasons: list[EligibilityReason] = []
    os_name = host.os
    if os_name != "linux":
        reasons.append(
            EligibilityReason(
                "host_os_unsupported", f"vLLM containers with GPUs need linux; host os is {os_name!r}"
            )
        )
    arch = host.arch
    platform = f"linux/{_PLATFORM_ARCH.get(arch, arch)}"
    if platform not in profile.image.platforms:
        reasons.append(
            EligibilityReason(
                "image_platform_mismatch",
                f"image {profile.image.reference} is built for {sorted(profile.image.platforms)}; "
                f"host is {platform}",
            )
        )
    return reasons


def _gpu_reasons(profile: EngineProfile, host: HostFacts) -> list[EligibilityReason]:
    gpus = host.gpus
    tp = profile.tensor_parallel_size
    reasons: list[EligibilityReason] = []
    if tp > len(gpus):
        reasons.append(
            EligibilityReason(
                "tensor_parallel_exceeds_visible_gpus",
                f"tensor parallel size {tp} needs {tp} GPUs; the host shows {len(gpus)}",
            )
        )
        return reasons
    chosen = profile.gpu_indices
    outside = [index for index in chosen if not 0 <= index < len(gpus)]
    if len(chosen) != tp or len(set(chosen)) != len(chosen) or outside:
        reasons.append(
            EligibilityReason(
                "gpu_selection_mismatch",
                f"gpu_indices {list(chosen)} must be {tp} distinct indices among the host's {len(gpus)} GPUs",
            )
        )
        return reasons
    reasons += _capability_reasons(profile, [gpus[i] for i in chosen], chosen)
    reasons += _memory_reasons(profile, host, [gpus[i] for i in chosen], chosen)
    return reasons


def _capability_reasons(
    profile: EngineProfile, gpus: Sequence[GpuFacts], indices: Sequence[int]
) -> list[EligibilityReason]:
    minimum = profile.image.min_compute_capability
    if minimum is None:
        return []
    reasons: list[EligibilityReason] = []
    for index, gpu in zip(indices, gpus, strict=True):
        new_enough = capability_at_least(gpu.compute_capability, minimum)
        if new_enough is None:
            reasons.append(
                EligibilityReason(
                    "compute_capability_unknown",
                    f"GPU {index} ({gpu.name}) reports no compute capability; the image "
                    f"needs at least {profile.image.min_compute_capability}",
                )
            )
        elif not new_enough:
            reasons.append(
                EligibilityReason(
                    "compute_capability_below_image_minimum",
                    f"GPU {index} ({gpu.name}) is SM {gpu.compute_capability}; image "
                    f"{profile.image.reference} needs at least {profile.image.min_compute_capability}",
                )
            )
    return reasons


def _memory_reasons(
    profile: EngineProfile, host: HostFacts, gpus: Sequence[GpuFacts], indices: Sequence[int]
) -> list[EligibilityReason]:
    needed = profile.required_gpu_memory_bytes
    if needed is None:
        return []
    reasons: list[EligibilityReason] = []
    for index, gpu in zip(indices, gpus, strict=True):
        memory = gpu_memory_bytes(gpu, host)
        if memory is None:
            reasons.append(
                EligibilityReason(
                    "gpu_memory_unknown",
                    f"GPU {index} ({gpu.name}) memory is unknown; the profile needs "
                    f"{needed} bytes per GPU and unknown is never enough",
                )
            )
        elif memory < needed:
            reasons.append(
                EligibilityReason(
                    "gpu_memory_insufficient",
                    f"GPU {index} ({gpu.name}) has {memory} bytes; the profile needs {needed}",
                )
            )
    return reasons


def _engine_reasons(profile: EngineProfile) -> list[EligibilityReason]:
    image = profile.image
    reasons: list[EligibilityReason] = []
    quant = quantization_args(profile.weight_format, profile.compute_dtype)
    if quant.refusal is not None:
        reasons.append(EligibilityReason("quantization_unresolvable", quant.refusal))
    elif quant.quantization is not None and quant.quantization not in image.quantizations:
        reasons.append(
            EligibilityReason(
                "quantization_unresolvable",
                f"image {image.reference} cannot load {quant.quantization} weights "
                f"(supports {sorted(image.quantizations)})",
            )
        )
    _, kv_refusal = kv_cache_dtype_arg(profile.kv_cache_dtype, quant.dtype)
    if kv_refusal is None and profile.kv_cache_dtype not in image.kv_cache_dtypes:
        kv_refusal = (
            f"image {image.reference} does not support KV cache dtype {profile.kv_cache_dtype!r} "
            f"(supports {sorted(image.kv_cache_dtypes)})"
        )
    if kv_refusal is not None:
        reasons.append(EligibilityReason("kv_cache_dtype_unsupported", kv_refusal))
    draft = profile.draft
    if draft is not None and draft.method not in image.speculative_methods:
        reasons.append(
            EligibilityReason(
                "drafter_unsupported_by_image",
                f"image {image.reference} cannot serve drafter method {draft.method!r} "
                f"(serves {sorted(image.speculative_methods)})",
            )
        )
    elif draft is not None and draft.method == "draft_model" and draft.weights_dir is None:
        reasons.append(
            EligibilityReason(
                "drafter_unsupported_by_image",
                "drafter method 'draft_model' needs a draft weights directory; none given",
            )
        )
    return reasons


def eligibility(profile: EngineProfile, host: HostFacts) -> EligibilityVerdict:
    """Every reason this host cannot run ``profile``; eligible only when there are none.

    ``host`` is the session's host facts (a ``--specgate-host-facts`` file replaces the
    probe); GPU memory and compute capability are matched by :mod:`pytest_specgate.selection.hardware`,
    the matcher every ``hardware`` marker uses.
    """
    reasons: list[EligibilityReason] = []
    if not image_is_pinned(profile.image.reference):
        reasons.append(
            EligibilityReason(
                "image_unpinned",
                f"image {profile.image.reference!r} is neither a digest nor a fixed tag",
            )
        )
    reasons += _host_reasons(profile, host)
    reasons += _gpu_reasons(profile, host)
    reasons += _engine_reasons(profile)
    return EligibilityVerdict(eligible=not reasons, reasons=tuple(reasons))
