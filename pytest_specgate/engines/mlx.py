"""The mlx-lm backend: ``mlx_lm.server`` as a subprocess, checked before it boots.

mlx-lm is weaker than the spec in two places, so this module enforces the spec
itself before any process starts:

* a draft whose tokenizer differs from the target's only earns a log warning
  from the server (it compares vocabulary *sizes*); here the shared
  :func:`~pytest_specgate.engines.tokenizer_match.check_draft_tokenizer`
  compares them token by token and a difference refuses start-up with
  ``draft_model_tokenizer_mismatch`` (FR-4.4), an unreadable tokenizer with
  ``draft_model_tokenizer_unverifiable``;
* nothing checks that target plus draft fit in memory; here weights on disk
  plus a KV-cache estimate are compared with a limit and a shortfall refuses
  start-up with ``draft_model_capacity_shortfall`` (FR-4.6). An unknown limit
  refuses too: unknown memory is never treated as enough.

The server's prompt cache is off by default (``--prompt-cache-size 0``): with a
draft model, mlx-lm 0.32.2 reuses a cached prompt whose KV state no longer
matches its tokens, and from the third identical greedy request on the output
drifts away from the baseline (then restarts mid-answer). Baseline engines get
the same setting so A/B timings compare like with like.

The server reports no speculative-decoding counters (no ``/metrics``, nothing in
the responses), so :meth:`Engine.telemetry` says ``available=False``. The only
acceptance signal mlx-lm has is the per-token ``from_draft`` flag of its Python
API; :func:`measure_acceptance` runs that in-process for specs that need a rate.

Options (``@pytest.mark.engine(..., option=value)``):

``boot_timeout_s``      deadline for the server to become healthy (default 120).
``memory_limit_bytes``  capacity to check against (default: host memory available).
``context_tokens``      tokens per sequence in the KV estimate (default 4096).
``model_cache``         where ``tiny:<role>`` models are built (default ``workdir/tiny-models``).
``max_tokens``          the server's default completion length (default 256).
``request_timeout_s``   per-request client timeout (default 120).
``prompt_cache_size``   the server's ``--prompt-cache-size`` (default 0, see above).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import httpx

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import (
    EngineBootError,
    EngineStartupRefused,
    Telemetry,
    acceptance_rate_of,
)
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.engine_options import MLX_OPTIONS
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.boot import ManagedProcess, boot_error, free_loopback_port, wait_for_health
from pytest_specgate.engines.client import ClientEngine, EngineHTTPError, OpenAIClient
from pytest_specgate.engines.tokenizer_match import check_draft_tokenizer
from pytest_specgate.fetching.tiny_models import is_tiny_ref, resolve_model_ref

__all__ = [
    "BACKEND",
    "BootPlan",
    "MemoryEstimate",
    "MlxEngine",
    "boot",
    "check_capacity",
    "count_draft_acceptance",
    "estimate_memory",
    "host_memory_bytes",
    "measure_acceptance",
    "mlx_versions",
    "plan_boot",
    "server_argv",
    "start_server",
]

BACKEND = "mlx"
DEFAULT_BOOT_TIMEOUT_S = 120.0
DEFAULT_CONTEXT_TOKENS = 4096
DEFAULT_MAX_TOKENS = 256
DEFAULT_NUM_DRAFT_TOKENS = 3
DEFAULT_REQUEST_TIMEOUT_S = 120.0
CAPACITY_SHORTFALL = "draft_model_capacity_shortfall"
_MLX_FINAL_STATUSES = {
    503: "its generation thread failed, usually because a model could not be loaded "
    "(mlx_lm answers 503 forever once that thread has died)"
}
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes one model needs: weights as stored on disk plus its KV cache."""

    model_dir: Path
    weights_bytes: int
    kv_cache_bytes: int
    context_tokens: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes


def estimate_memory(model_dir: Path, context_tokens: int) -> MemoryEstimate:
    """Weights on disk plus a full-precision KV cache for one sequence of ``context_tokens``.

    Raises EngineStartupRefused when the checkpoint does not say enough to estimate.
    """
    weights = sum(path.stat().st_size for path in model_dir.glob("*.safetensors"))
    config_path = model_dir / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config = config.get("text_config", config)
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EngineStartupRefused(
            CAPACITY_SHORTFALL,
            f"cannot estimate the memory of {model_dir}: {config_path} lacks "
            f"num_hidden_layers/num_attention_heads/hidden_size ({exc!r})",
        ) from exc
    if weights == 0:
        raise EngineStartupRefused(
            CAPACITY_SHORTFALL, f"cannot estimate the memory of {model_dir}: no *.safetensors"
        )
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "float16")
    element = _DTYPE_BYTES.get(dtype, 2)
    kv_cache = 2 * layers * kv_heads * head_dim * context_tokens * element
    return MemoryEstimate(model_dir, weights, kv_cache, context_tokens)


def host_memory_bytes() -> tuple[int | None, str]:
    """Memory a server may use on this host and where the figure came from (None if unknown)."""
    if sys.platform == "darwin":
        try:
            import mlx.core as mx

            info = mx.device_info()
            size = info.get("max_recommended_working_set_size")
            if isinstance(size, int) and size > 0:
                return size, "mlx max_recommended_working_set_size"
        except (ImportError, AttributeError, RuntimeError):
            return None, "mlx device_info unavailable"
        return None, "mlx device_info without max_recommended_working_set_size"
    try:
        meminfo = Path("/proc/meminfo").read_text(encoding="utf-8")
    except OSError:
        return None, "/proc/meminfo unreadable"
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024, "/proc/meminfo MemAvailable"
    return None, "/proc/meminfo without MemAvailable"


def check_capacity(
    target_dir: Path,
    draft_dir: Path,
    *,
    context_tokens: int,
    limit_bytes: int | None,
    limit_source: str,
) -> tuple[MemoryEstimate, MemoryEstimate]:
    """Refuse a target + draft pair that does not fit in ``limit_bytes`` (FR-4.6)."""
    target = estimate_memory(target_dir, context_tokens)
    draft = estimate_memory(draft_dir, context_tokens)
    needed = target.total_bytes + draft.total_bytes
    figures = (
        f"target {target.weights_bytes} B weights + {target.kv_cache_bytes} B KV, "
        f"draft {draft.weights_bytes} B weights + {draft.kv_cache_bytes} B KV "
        f"at {context_tokens} context tokens = {needed} B"
    )
    if limit_bytes is None:
        raise EngineStartupRefused(
            CAPACITY_SHORTFALL,
            f"cannot verify that {target_dir} with draft {draft_dir} fits: host memory is "
            f"unknown ({limit_source}); pass memory_limit_bytes=; needs {figures}",
        )
    if needed > limit_bytes:
        raise EngineStartupRefused(
            CAPACITY_SHORTFALL,
            f"{target_dir} with draft {draft_dir} needs {figures}, "
            f"more than the {limit_bytes} B available ({limit_source})",
        )
    return target, draft


def count_draft_acceptance(
    from_draft: Sequence[bool], *, num_draft_tokens: int, max_tokens: int
) -> tuple[int, int]:
    """(drafted, accepted) reconstructed from mlx-lm's per-token ``from_draft`` flags.

    mlx-lm's speculative loop drafts ``min(max_tokens - generated, num_draft_tokens)``
    tokens per round and ends every round with one token of the target (False);
    so rounds start at the first token and after every False, which makes the
    drafted count exact rather than estimated.
    """
    drafted = 0
    round_starts = (index for index in range(len(from_draft)) if index == 0 or not from_draft[index - 1])
    for generated in round_starts:
        drafted += min(max_tokens - generated, num_draft_tokens)
    return drafted, sum(1 for flag in from_draft if flag)


def measure_acceptance(
    target_dir: Path,
    draft_dir: Path,
    prompts: Sequence[list[dict[str, object]]],
    *,
    num_draft_tokens: int,
    max_tokens: int,
) -> Telemetry:
    """Greedy speculative generation in this process, counting mlx-lm's ``from_draft`` flags.

    This is not the server's telemetry (the server has none): it loads both
    models here and generates each chat prompt once; the window says so.
    """
    from mlx_lm import load, stream_generate

    model, tokenizer = load(str(target_dir))[:2]
    draft_model = load(str(draft_dir))[0]
    drafted = accepted = 0
    for messages in prompts:
        prompt = tokenizer.apply_chat_template(  # type: ignore[no-untyped-call]
            messages, add_generation_prompt=True
        )
        flags = [
            bool(step.from_draft)
            for step in stream_generate(
                model,
                tokenizer,
                prompt,
                max_tokens=max_tokens,
                draft_model=draft_model,
                num_draft_tokens=num_draft_tokens,
            )
        ]
        counts = count_draft_acceptance(flags, num_draft_tokens=num_draft_tokens, max_tokens=max_tokens)
        drafted += counts[0]
        accepted += counts[1]
    return Telemetry(
        available=True,
        enabled=True,
        draft_model_id=str(draft_dir),
        num_draft_tokens=num_draft_tokens,
        drafted=drafted,
        accepted=accepted,
        acceptance_rate=acceptance_rate_of(drafted, accepted),
        window=f"in_process:{len(prompts)}_prompts",
        source="mlx_lm.stream_generate:from_draft",
    )


@dataclass(frozen=True)
class BootPlan:
    """Everything decided before a process starts; pre-boot checks have passed."""

    target: Path
    draft: Path | None
    num_draft_tokens: int | None
    max_tokens: int
    boot_timeout_s: float
    request_timeout_s: float
    prompt_cache_size: int = 0


class MlxEngine(ClientEngine):
    """A ClientEngine that also keeps the server process, its log and the model paths."""

    def __init__(
        self, *, plan: BootPlan, process: ManagedProcess, client: OpenAIClient, versions: dict[str, str]
    ) -> None:
        super().__init__(
            backend=BACKEND,
            client=client,
            model_id=str(plan.target),
            telemetry=functools.partial(
                Telemetry.unavailable,
                enabled=plan.draft is not None,
                draft_model_id=None if plan.draft is None else str(plan.draft),
                num_draft_tokens=plan.num_draft_tokens,
            ),
            close=process.terminate,
            versions=lambda: dict(versions),
        )
        self.plan = plan
        self.process = process
        self.log_path = process.log_path

    def capabilities(self) -> Capabilities:
        """A process and its log; mlx_lm.server has no counters to reset, no faults, no swap."""
        return Capabilities(process=self.process, log=self.log_path)


def mlx_versions() -> dict[str, str]:
    """Installed versions of the packages that serve (the server runs this interpreter)."""
    found = {"python": platform.python_version()}
    for package in ("mlx", "mlx-lm", "mlx-metal", "mlx-cpu"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def server_argv(plan: BootPlan, port: int, *, python: str = sys.executable) -> list[str]:
    """The ``mlx_lm server`` command line for ``plan`` on 127.0.0.1:``port``."""
    argv = [python, "-m", "mlx_lm", "server", "--model", str(plan.target)]
    if plan.draft is not None:
        argv += ["--draft-model", str(plan.draft), "--num-draft-tokens", str(plan.num_draft_tokens)]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--max-tokens", str(plan.max_tokens)]
    argv += ["--prompt-cache-size", str(plan.prompt_cache_size)]
    return argv


def _local_model_dir(config: EngineConfig, role: str, ref: str, cache: Path) -> Path:
    """A local checkpoint directory for ``ref``: a path, ``tiny:<role>`` or an HF cache entry."""
    if is_tiny_ref(ref):
        try:
            return Path(resolve_model_ref(ref, cache))
        except ValueError as exc:
            raise SpecgateInputError(f"mlx engine ({config.describe()}): {role}: {exc}") from exc
    path = Path(ref).expanduser()
    if path.is_dir():
        return path.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(ref, local_files_only=True))
    except (ImportError, OSError, ValueError) as exc:
        raise EngineBootError(
            f"mlx engine: {role} {ref!r} is neither a local directory nor in the Hugging Face "
            f"cache (nothing is downloaded at boot; fetch it first): {exc}"
        ) from exc


def plan_boot(config: EngineConfig, workdir: Path) -> BootPlan:
    """Resolve models and options and run the pre-boot checks; no process is started."""
    unknown = sorted(name for name, _ in config.options if name not in MLX_OPTIONS)
    if unknown:
        raise SpecgateInputError(
            f"mlx engine ({config.describe()}): unknown option(s) {unknown}; "
            f"known: {sorted(MLX_OPTIONS)}"
        )
    if config.target is None:
        raise SpecgateInputError(
            f"mlx engine ({config.describe()}): needs target= (a local checkpoint, a cached "
            "Hugging Face id or tiny:<role>)"
        )
    cache = Path(str(config.option("model_cache", workdir / "tiny-models")))
    target = _local_model_dir(config, "target", config.target, cache)
    draft = None if config.draft is None else _local_model_dir(config, "draft", config.draft, cache)
    gamma = None
    if draft is not None:
        gamma = config.num_draft_tokens or DEFAULT_NUM_DRAFT_TOKENS
        check_draft_tokenizer(target, draft)
        limit = config.option("memory_limit_bytes")
        if limit is None:
            limit_bytes, limit_source = host_memory_bytes()
        else:
            limit_bytes = int(config.positive_number_option("memory_limit_bytes", 1))
            limit_source = "option memory_limit_bytes"
        check_capacity(
            target,
            draft,
            context_tokens=int(config.positive_number_option("context_tokens", DEFAULT_CONTEXT_TOKENS)),
            limit_bytes=limit_bytes,
            limit_source=limit_source,
        )
    return BootPlan(
        target=target,
        draft=draft,
        num_draft_tokens=gamma,
        max_tokens=int(config.positive_number_option("max_tokens", DEFAULT_MAX_TOKENS)),
        boot_timeout_s=config.positive_number_option("boot_timeout_s", DEFAULT_BOOT_TIMEOUT_S),
        request_timeout_s=config.positive_number_option("request_timeout_s", DEFAULT_REQUEST_TIMEOUT_S),
        prompt_cache_size=config.int_option("prompt_cache_size", 0, minimum=0),
    )


def _server_env(base: Mapping[str, str]) -> dict[str, str]:
    """The parent's environment, offline (boot never downloads) and with unbuffered logs."""
    return {**base, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}


def start_server(plan: BootPlan, workdir: Path) -> MlxEngine:
    """Start ``mlx_lm server`` for ``plan`` and return it once it has answered a request.

    ``/health`` turns 200 as soon as the generation thread runs, before the model
    has loaded, so readiness also waits for a one-token completion. Any failure
    on the way (including Ctrl-C) stops the process group before re-raising.
    """
    started = time.monotonic()
    port = free_loopback_port()
    base_url = f"http://127.0.0.1:{port}"
    process = ManagedProcess()
    client: OpenAIClient | None = None
    try:
        process.start(
            server_argv(plan, port), _server_env(os.environ), workdir / f"mlx_lm-server-{port}.log"
        )
        wait_for_health(
            f"{base_url}/health", plan.boot_timeout_s, process, final_statuses=_MLX_FINAL_STATUSES
        )
        client = OpenAIClient(base_url, timeout_s=plan.request_timeout_s, backend="mlx")
        remaining = max(plan.boot_timeout_s - (time.monotonic() - started), 1.0)
        fingerprint = _first_completion(client, plan, remaining, process)
        versions = {**mlx_versions(), "mlx_lm.server fingerprint": fingerprint,
                    "prompt_cache_size": str(plan.prompt_cache_size)}
        return MlxEngine(plan=plan, process=process, client=client, versions=versions)
    except BaseException:
        if client is not None:
            client.close()
        process.terminate()
        raise


def _first_completion(
    client: OpenAIClient, plan: BootPlan, timeout_s: float, process: ManagedProcess
) -> str:
    """One-token completion proving the model loaded; returns the server's fingerprint."""
    body = {
        "model": str(plan.target),
        "messages": [{"role": "user", "content": "ready?"}],
        "max_tokens": 1,
        "temperature": 0,
    }
    try:
        result = client.chat(body, timeout_s=timeout_s)
    except (EngineHTTPError, httpx.HTTPError, ValueError, OSError) as exc:
        raise boot_error(
            f"mlx_lm server (pid {process.pid}) is healthy but did not answer a first "
            f"completion within {timeout_s:.1f}s: {exc}",
            process,
        ) from exc
    fingerprint = result.raw.get("system_fingerprint")
    return fingerprint if isinstance(fingerprint, str) else "unknown"


def boot(config: EngineConfig, workdir: Path) -> MlxEngine:
    """The backend entry point (``BUILTIN_BACKENDS["mlx"]``): check, start, wait, hand over."""
    return start_server(plan_boot(config, workdir), workdir)
