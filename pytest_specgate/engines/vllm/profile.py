"""Engine profiles for vLLM in a container: what to serve, on which image and GPUs.

A profile is plain frozen data, so the eligibility check and the compose
generator are pure functions of it and can be tested without Docker or a GPU.
The dispatch tables here (weight format -> ``--quantization``/``--dtype``, our KV
cache names -> ``--kv-cache-dtype``) are shared by both, so what the check
accepts is exactly what the generator can emit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Final

__all__ = [
    "COMPUTE_DTYPES",
    "KV_CACHE_DTYPE_ARGS",
    "QUANTIZATIONS",
    "SERVED_MODEL_NAME_LIMIT",
    "DraftSpec",
    "EngineImage",
    "EngineProfile",
    "QuantizationArgs",
    "image_is_pinned",
    "kv_cache_dtype_arg",
    "quantization_args",
    "sanitize_served_model_name",
]

COMPUTE_DTYPES: Final = frozenset({"float16", "bfloat16", "float32"})
# Weight formats vLLM loads with an explicit --quantization method; the compute
# dtype has to come from the profile because the safetensors hold storage dtypes.
QUANTIZATIONS: Final = frozenset({"awq", "gptq", "compressed-tensors", "fp8"})
# Our KV cache names -> the value of --kv-cache-dtype; None means "omit the flag"
# (the cache then follows the model dtype, which the check requires to match).
KV_CACHE_DTYPE_ARGS: Final[dict[str, str | None]] = {
    "auto": None,
    "bf16": None,
    "fp16": None,
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8_e5m2",
}
_KV_FOLLOWS_DTYPE: Final = {"bf16": "bfloat16", "fp16": "float16"}
SERVED_MODEL_NAME_LIMIT: Final = 128
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_TAG = re.compile(r":([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$")


@dataclass(frozen=True)
class EngineImage:
    """A vLLM container image and what that build can serve.

    ``reference`` must be pinned (a digest, or a tag other than ``latest``): the
    evidence has to say exactly which engine produced it.
    """

    reference: str
    speculative_methods: frozenset[str] = frozenset({"draft_model", "ngram"})
    kv_cache_dtypes: frozenset[str] = frozenset(KV_CACHE_DTYPE_ARGS)
    quantizations: frozenset[str] = QUANTIZATIONS
    min_compute_capability: str | None = None
    platforms: frozenset[str] = frozenset({"linux/amd64"})


@dataclass(frozen=True)
class DraftSpec:
    """Speculative decoding in the container: a draft model directory or a model-free method."""

    method: str
    num_speculative_tokens: int
    weights_dir: str | None = None
    slug: str | None = None
    options: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class EngineProfile:
    """One vLLM container: the model, its format, the GPUs and the image.

    ``weights_dir`` is an absolute host path, bind-mounted read-only; ``gpu_indices``
    are the GPUs this run was priced for and the only ones the container sees.
    """

    slug: str
    weights_dir: str
    weight_format: str
    image: EngineImage
    compute_dtype: str | None = None
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    gpu_indices: tuple[int, ...] = (0,)
    max_model_len: int = 4096
    gpu_memory_utilization: float = 0.9
    max_num_seqs: int | None = None
    host_port: int = 8000
    trust_remote_code: bool = False
    draft: DraftSpec | None = None
    required_gpu_memory_bytes: int | None = None
    extra_args: tuple[str, ...] = field(default=())

    @property
    def served_model_name(self) -> str:
        return sanitize_served_model_name(self.slug)

    @property
    def container_model_path(self) -> str:
        return str(PurePosixPath("/models") / self.served_model_name)


def sanitize_served_model_name(slug: str) -> str:
    """Lowercase, every character outside ``[a-z0-9._-]`` becomes ``-``, runs collapsed.

    The result is also a safe single path component, since it names the mount point.
    """
    lowered = re.sub(r"[^a-z0-9._-]", "-", slug.strip().lower())
    collapsed = re.sub(r"-{2,}", "-", lowered).strip("-._")
    capped = collapsed[:SERVED_MODEL_NAME_LIMIT].rstrip("-._")
    if not capped:
        raise ValueError(f"model slug {slug!r} leaves no usable served model name")
    return capped


def image_is_pinned(reference: str) -> bool:
    """A digest, or an explicit tag that is not ``latest``."""
    if _DIGEST.search(reference):
        return True
    last = reference.rsplit("/", 1)[-1]
    tag = _TAG.search(last)
    return tag is not None and tag.group(1) != "latest"


@dataclass(frozen=True)
class QuantizationArgs:
    """The ``--quantization``/``--dtype`` pair for a weight format, or why there is none."""

    quantization: str | None
    dtype: str | None
    refusal: str | None


def quantization_args(weight_format: str, compute_dtype: str | None) -> QuantizationArgs:
    """Dispatch a weight format; never guess a quantization method or pass a storage dtype."""
    if weight_format in COMPUTE_DTYPES:
        return QuantizationArgs(None, weight_format, None)
    if weight_format == "autoround":
        return QuantizationArgs(
            None, None, "autoround weights need a curated loader; this generator will not guess one"
        )
    if weight_format not in QUANTIZATIONS:
        return QuantizationArgs(
            None,
            None,
            f"weight format {weight_format!r} is not one of {sorted(COMPUTE_DTYPES | QUANTIZATIONS)}",
        )
    if compute_dtype not in COMPUTE_DTYPES:
        return QuantizationArgs(
            weight_format,
            None,
            f"{weight_format} weights need a compute dtype in {sorted(COMPUTE_DTYPES)}, "
            f"got {compute_dtype!r}",
        )
    return QuantizationArgs(weight_format, compute_dtype, None)


def kv_cache_dtype_arg(kv_cache_dtype: str, model_dtype: str | None) -> tuple[str | None, str | None]:
    """(``--kv-cache-dtype`` value or None to omit, refusal or None).

    ``bf16``/``fp16`` are emitted by omitting the flag, which is only right when the
    model's compute dtype is that same type.
    """
    if kv_cache_dtype not in KV_CACHE_DTYPE_ARGS:
        return None, f"KV cache dtype {kv_cache_dtype!r} is not one of {sorted(KV_CACHE_DTYPE_ARGS)}"
    follows = _KV_FOLLOWS_DTYPE.get(kv_cache_dtype)
    if follows is not None and model_dtype != follows:
        return None, (
            f"KV cache dtype {kv_cache_dtype!r} needs model dtype {follows!r}, "
            f"but the model runs in {model_dtype!r}"
        )
    return KV_CACHE_DTYPE_ARGS[kv_cache_dtype], None
