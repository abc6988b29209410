"""vLLM in docker compose: a compose file generated from an :class:`EngineProfile`.

The generator is pure (profile in, document out) so every emitted field can be
checked without Docker. Booting goes through an injectable :class:`ComposeRunner`;
``up`` runs *inside* the ``try`` whose ``finally`` calls ``down``, because a
failed ``up`` can still leave containers, networks and project state behind.
Containers do not die with pytest, so a watcher runs ``down`` if pytest does
without reaching that ``finally`` (SIGKILL, pytest-timeout's thread method).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, Protocol

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.engines.vllm.eligibility import eligibility
from pytest_specgate.engines.vllm.profile import (
    EngineProfile,
    image_is_pinned,
    kv_cache_dtype_arg,
    quantization_args,
    sanitize_served_model_name,
)

if TYPE_CHECKING:
    from pytest_specgate.contracts.host import HostFacts
    from pytest_specgate.engines.vllm.process import VllmEngine

__all__ = [
    "COMPOSE_FILE_NAME",
    "CONTAINER_PORT",
    "SERVICE_NAME",
    "ComposeProject",
    "ComposeRefused",
    "ComposeRunner",
    "DockerComposeRunner",
    "boot_compose",
    "compose_document",
    "compose_project",
    "compose_yaml",
    "speculative_config",
]

SERVICE_NAME: Final = "vllm"
CONTAINER_PORT: Final = 8000
COMPOSE_FILE_NAME: Final = "compose.yaml"
_DRAFT_MOUNT_ROOT: Final = PurePosixPath("/models/draft")
_DOWN: Final = ("down", "--remove-orphans")


class ComposeRefused(ValueError):
    """The profile cannot be turned into a compose file; the message says which field."""


def _draft_container_path(profile: EngineProfile) -> str | None:
    draft = profile.draft
    if draft is None or draft.weights_dir is None:
        return None
    name = sanitize_served_model_name(draft.slug or PurePosixPath(draft.weights_dir).name)
    return str(_DRAFT_MOUNT_ROOT / name)


def speculative_config(profile: EngineProfile) -> dict[str, object] | None:
    """The ``--speculative-config`` JSON object for the profile's drafter, if any."""
    draft = profile.draft
    if draft is None:
        return None
    config: dict[str, object] = {"num_speculative_tokens": draft.num_speculative_tokens}
    draft_path = _draft_container_path(profile)
    if draft.method == "draft_model":
        if draft_path is None:
            raise ComposeRefused("draft method 'draft_model' needs draft.weights_dir")
        config["model"] = draft_path
    else:
        config["method"] = draft.method
    config.update(dict(draft.options))
    return config


def _engine_args(profile: EngineProfile) -> list[str]:
    quant = quantization_args(profile.weight_format, profile.compute_dtype)
    if quant.refusal is not None or quant.dtype is None:
        raise ComposeRefused(f"profile {profile.slug!r}: {quant.refusal}")
    kv_arg, kv_refusal = kv_cache_dtype_arg(profile.kv_cache_dtype, quant.dtype)
    if kv_refusal is not None:
        raise ComposeRefused(f"profile {profile.slug!r}: {kv_refusal}")
    args = [
        "--model",
        profile.container_model_path,
        "--served-model-name",
        profile.served_model_name,
        "--host",
        "0.0.0.0",
        "--port",
        str(CONTAINER_PORT),
        "--dtype",
        quant.dtype,
        "--tensor-parallel-size",
        str(profile.tensor_parallel_size),
        "--max-model-len",
        str(profile.max_model_len),
        "--gpu-memory-utilization",
        str(profile.gpu_memory_utilization),
    ]
    if quant.quantization is not None:
        args += ["--quantization", quant.quantization]
    if kv_arg is not None:
        args += ["--kv-cache-dtype", kv_arg]
    if profile.max_num_seqs is not None:
        args += ["--max-num-seqs", str(profile.max_num_seqs)]
    spec = speculative_config(profile)
    if spec is not None:
        args += ["--speculative-config", json.dumps(spec, sort_keys=True)]
    if profile.trust_remote_code is True:
        args.append("--trust-remote-code")
    args += list(profile.extra_args)
    return args


def _volumes(profile: EngineProfile) -> list[str]:
    mounts = [(profile.weights_dir, profile.container_model_path)]
    draft_path = _draft_container_path(profile)
    if draft_path is not None and profile.draft is not None and profile.draft.weights_dir:
        mounts.append((profile.draft.weights_dir, draft_path))
    for host_path, _ in mounts:
        if not PurePosixPath(host_path).is_absolute() or ":" in host_path:
            raise ComposeRefused(
                f"profile {profile.slug!r}: weights directory must be an absolute path "
                f"without ':', got {host_path!r}"
            )
    return [f"{host}:{container}:ro" for host, container in mounts]


def compose_document(profile: EngineProfile) -> dict[str, object]:
    """The compose file as a JSON-compatible dict (the YAML is this, dumped)."""
    if not image_is_pinned(profile.image.reference):
        raise ComposeRefused(
            f"profile {profile.slug!r}: image {profile.image.reference!r} is not pinned "
            "(use a digest or a fixed tag)"
        )
    devices = [str(index) for index in profile.gpu_indices]
    service: dict[str, object] = {
        "image": profile.image.reference,
        "command": _engine_args(profile),
        "environment": {
            "NVIDIA_VISIBLE_DEVICES": ",".join(devices),
            "HF_HUB_OFFLINE": "1",
        },
        "volumes": _volumes(profile),
        "ports": [f"127.0.0.1:{profile.host_port}:{CONTAINER_PORT}"],
        "ipc": "host",
        "deploy": {
            "resources": {
                "reservations": {
                    "devices": [{"driver": "nvidia", "device_ids": devices, "capabilities": ["gpu"]}]
                }
            }
        },
    }
    return {
        "name": f"specgate-{profile.served_model_name.replace('.', '-')}",
        "services": {SERVICE_NAME: service},
    }


def compose_yaml(profile: EngineProfile) -> str:
    """The compose file text (PyYAML is imported here only)."""
    import yaml

    return str(yaml.safe_dump(compose_document(profile), sort_keys=False, default_flow_style=False))


class ComposeRunner(Protocol):
    """How a compose project is started and stopped; tests inject a recording one."""

    def up(self, project_dir: Path, compose_file: Path) -> None: ...

    def down(self, project_dir: Path, compose_file: Path) -> None: ...

    def down_argv(self, project_dir: Path, compose_file: Path) -> Sequence[str] | None:
        """The command that runs ``down`` from another process if this one dies first (None: none)."""
        ...

    def logs(self, project_dir: Path, compose_file: Path, tail: int) -> str: ...


@dataclass(frozen=True)
class DockerComposeRunner:
    """Shells out to ``docker compose --project-directory DIR -f FILE ...``."""

    docker: str = "docker"
    timeout_s: float = 900.0

    def _argv(self, project_dir: Path, compose_file: Path, *command: str) -> list[str]:
        return [self.docker, "compose", "--project-directory", str(project_dir), "-f", str(compose_file),
                *command]

    def _run(
        self, project_dir: Path, compose_file: Path, *command: str, check: bool
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self._argv(project_dir, compose_file, *command),
            check=check, timeout=self.timeout_s, capture_output=True, text=True,
        )

    def up(self, project_dir: Path, compose_file: Path) -> None:
        self._run(project_dir, compose_file, "up", "-d", check=True)

    def down(self, project_dir: Path, compose_file: Path) -> None:
        self._run(project_dir, compose_file, *_DOWN, check=True)

    def down_argv(self, project_dir: Path, compose_file: Path) -> list[str]:
        return self._argv(project_dir, compose_file, *_DOWN)

    def logs(self, project_dir: Path, compose_file: Path, tail: int) -> str:
        command = ("logs", "--no-color", "--tail", str(tail))
        completed = self._run(project_dir, compose_file, *command, check=False)
        return completed.stdout + completed.stderr


@dataclass(frozen=True)
class ComposeProject:
    """A written compose file and where it was booted from."""

    project_dir: Path
    compose_file: Path
    base_url: str
    served_model_name: str


def _log_tail(runner: ComposeRunner, project: ComposeProject, lines: int) -> str:
    try:
        return runner.logs(project.project_dir, project.compose_file, lines)
    except Exception as exc:  # the logs only annotate an error already raised; never replace it
        return f"(compose logs unavailable: {exc})"


@contextmanager
def compose_project(
    profile: EngineProfile,
    host_facts: HostFacts,
    project_dir: Path,
    runner: ComposeRunner,
    wait_healthy: Callable[[str], None],
    *,
    log_lines: int = 40,
) -> Iterator[ComposeProject]:
    """Check, write, ``up``, wait for health, yield; ``down`` always runs on the way out.

    Refuses (``EngineStartupRefused`` with the first reason's code) before writing
    anything when the host cannot run the profile.
    """
    verdict = eligibility(profile, host_facts)
    if not verdict.eligible:
        raise EngineStartupRefused(
            verdict.reasons[0].code,
            f"vLLM profile {profile.slug!r} cannot run on this host: {verdict.summary()}",
        )
    text = compose_yaml(profile)
    project_dir.mkdir(parents=True, exist_ok=True)
    compose_file = project_dir / COMPOSE_FILE_NAME
    compose_file.write_text(text, encoding="utf-8")
    project = ComposeProject(
        project_dir=project_dir,
        compose_file=compose_file,
        base_url=f"http://127.0.0.1:{profile.host_port}",
        served_model_name=profile.served_model_name,
    )
    with _down_if_orphaned(runner.down_argv(project_dir, compose_file)):
        try:
            try:
                runner.up(project_dir, compose_file)
                wait_healthy(project.base_url)
            except Exception as exc:  # annotated with the compose logs and re-raised unchanged
                exc.add_note(f"compose logs ({compose_file}):\n{_log_tail(runner, project, log_lines)}")
                raise
            yield project
        finally:
            runner.down(project_dir, compose_file)


def _down_if_orphaned(down: Sequence[str] | None) -> AbstractContextManager[None]:
    if down is None:
        return nullcontext()
    from pytest_specgate.engines.boot import run_if_orphaned

    return run_if_orphaned(down)


def boot_compose(
    profile: EngineProfile,
    host_facts: HostFacts,
    project_dir: Path,
    *,
    runner: ComposeRunner | None = None,
    boot_timeout_s: float = 900.0,
) -> VllmEngine:
    """Boot ``profile`` with docker compose; closing the engine runs ``down``.

    The project is entered through an ExitStack, so a failure anywhere after
    ``up`` (health, ``/metrics``) unwinds it, and a healthy engine keeps it open
    until :meth:`VllmEngine.close`.
    """
    from pytest_specgate.engines.boot import wait_for_health
    from pytest_specgate.engines.client import OpenAIClient
    from pytest_specgate.engines.spec_decode_metrics import SpecDecodeTelemetry
    from pytest_specgate.engines.vllm.process import VllmEngine

    chosen = runner or DockerComposeRunner()
    stack = ExitStack()
    try:
        project = stack.enter_context(compose_project(
            profile, host_facts, project_dir, chosen,
            lambda url: wait_for_health(f"{url}/health", boot_timeout_s),
        ))
        client = OpenAIClient(project.base_url, backend="vllm")
        stack.callback(client.close)
        draft = profile.draft
        metrics = SpecDecodeTelemetry(
            lambda: client.get_text("/metrics"),
            enabled=draft is not None,
            draft_model_id=None if draft is None else (draft.slug or draft.weights_dir or draft.method),
            num_draft_tokens=None if draft is None else draft.num_speculative_tokens,
        )
        return VllmEngine(
            metrics=metrics,
            client=client,
            model_id=project.served_model_name,
            close=stack.close,
            versions=lambda: {"image": profile.image.reference, "mode": "compose"},
        )
    except BaseException:
        stack.close()
        raise
