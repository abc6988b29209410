"""The vLLM backend: a local ``api_server`` process, or a container booted with docker compose.

``mode="process"`` (the default) runs vLLM from a Python environment that has it
installed (see :mod:`.process`). ``mode="compose"`` generates a compose file from
an :class:`~.profile.EngineProfile` built from the engine options, checks it
against the host facts before anything is pulled or started (see
:mod:`.eligibility`) and boots it with ``docker compose`` (see :mod:`.compose`).

Compose-mode options: ``image`` (pinned reference, required), ``weights_dir``
(default ``target``), ``weight_format`` (default ``bfloat16``), ``compute_dtype``,
``kv_cache_dtype``, ``tensor_parallel_size``, ``gpu_indices``, ``max_model_len``,
``gpu_memory_utilization``, ``max_num_seqs``, ``trust_remote_code``,
``required_gpu_memory_bytes``, ``speculative_method``, ``host_facts`` (a facts
file; default: probe this host), ``boot_timeout_s``, and what the image can run:
``image_platforms`` (default ``["linux/amd64"]``), ``image_min_compute_capability``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import is_real

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.contracts.host import HostFacts
    from pytest_specgate.engines.vllm.profile import EngineImage, EngineProfile

__all__ = ["MODES", "boot", "host_facts_for", "profile_from_config"]

MODES = ("process", "compose")


def _str_option(config: EngineConfig, name: str, default: str | None) -> str | None:
    value = config.option(name, default)
    if value is not None and not isinstance(value, str):
        raise SpecgateInputError(f"vllm engine option {name} must be a string, got {value!r}")
    return value


def profile_from_config(config: EngineConfig, host_port: int) -> EngineProfile:
    """The compose-mode profile an ``engine("vllm", mode="compose", ...)`` marker describes."""
    from pytest_specgate.engines.vllm.profile import DraftSpec, EngineProfile

    image = _str_option(config, "image", None)
    if not image:
        raise SpecgateInputError("vllm compose mode needs image=<pinned image reference>")
    weights_dir = _str_option(config, "weights_dir", config.target)
    if not weights_dir or not config.target:
        raise SpecgateInputError("vllm compose mode needs target=<slug> and weights_dir=<host dir>")
    method = _str_option(config, "speculative_method", "draft_model" if config.draft else None)
    draft = None
    if method is not None:
        if config.num_draft_tokens is None:
            raise SpecgateInputError(f"vllm speculative_method {method!r} needs num_draft_tokens")
        draft = DraftSpec(
            method=method,
            num_speculative_tokens=config.num_draft_tokens,
            weights_dir=config.draft if method == "draft_model" else None,
            slug=config.draft,
        )
    gpu_indices = config.option("gpu_indices", (0,))
    if not isinstance(gpu_indices, tuple) or not all(isinstance(i, int) for i in gpu_indices):
        raise SpecgateInputError(f"vllm option gpu_indices must be a list of ints, got {gpu_indices!r}")
    utilization = config.option("gpu_memory_utilization", 0.9)
    if not is_real(utilization):
        raise SpecgateInputError(f"vllm option gpu_memory_utilization must be a number, got {utilization!r}")
    return EngineProfile(
        slug=config.target,
        weights_dir=weights_dir,
        weight_format=_str_option(config, "weight_format", "bfloat16") or "bfloat16",
        image=_image_from_config(config, image),
        compute_dtype=_str_option(config, "compute_dtype", None),
        kv_cache_dtype=_str_option(config, "kv_cache_dtype", "auto") or "auto",
        tensor_parallel_size=config.int_option("tensor_parallel_size", 1) or 1,
        gpu_indices=gpu_indices,
        max_model_len=config.int_option("max_model_len", 4096) or 4096,
        gpu_memory_utilization=float(utilization),
        max_num_seqs=config.int_option("max_num_seqs", None),
        host_port=host_port,
        trust_remote_code=config.option("trust_remote_code", False) is True,
        draft=draft,
        required_gpu_memory_bytes=config.int_option("required_gpu_memory_bytes", None),
    )


def _image_from_config(config: EngineConfig, reference: str) -> EngineImage:
    from pytest_specgate.engines.vllm.profile import EngineImage

    platforms = config.option("image_platforms", ("linux/amd64",))
    if not isinstance(platforms, tuple) or not all(isinstance(p, str) for p in platforms):
        raise SpecgateInputError(f"vllm option image_platforms must be a list of strings, got {platforms!r}")
    return EngineImage(
        reference=reference,
        platforms=frozenset(platforms),
        min_compute_capability=_str_option(config, "image_min_compute_capability", None),
    )


def host_facts_for(config: EngineConfig) -> HostFacts:
    """The facts file named by ``host_facts=`` (the plugin passes the session's facts), or the probe."""
    from pytest_specgate.selection.host_probe import load_host_facts, probe_host

    path = _str_option(config, "host_facts", None)
    return load_host_facts(Path(path)) if path else probe_host()


def boot(config: EngineConfig, workdir: Path) -> Engine:
    """The backend entry point (``BUILTIN_BACKENDS["vllm"]``)."""
    mode = config.option("mode", "process")
    if mode not in MODES:
        raise SpecgateInputError(f"vllm engine option mode must be one of {list(MODES)}, got {mode!r}")
    if mode == "compose":
        from pytest_specgate.engines.boot import free_loopback_port
        from pytest_specgate.engines.vllm.compose import boot_compose

        timeout = config.option("boot_timeout_s", 900.0)
        if not is_real(timeout):
            raise SpecgateInputError(f"vllm option boot_timeout_s must be a number, got {timeout!r}")
        profile = profile_from_config(config, free_loopback_port())
        return boot_compose(profile, host_facts_for(config), workdir / "compose",
                            boot_timeout_s=float(timeout))

    from pytest_specgate.engines.vllm.process import boot_process, process_spec_from_config
    from pytest_specgate.fetching.tiny_models import resolve_model_ref

    cache = Path(str(config.option("model_cache", workdir / "tiny-models")))
    return boot_process(
        process_spec_from_config(config, lambda ref: resolve_model_ref(ref, cache)), workdir
    )
