"""Compose generation from an engine profile, and the runner discipline around ``up``/``down``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.host import host_facts_from_dict
from pytest_specgate.engines.boot import free_loopback_port
from pytest_specgate.engines.vllm import boot, profile_from_config
from pytest_specgate.engines.vllm.compose import (
    COMPOSE_FILE_NAME,
    ComposeRefused,
    DockerComposeRunner,
    boot_compose,
    compose_document,
    compose_project,
    compose_yaml,
)
from pytest_specgate.engines.vllm.profile import (
    DraftSpec,
    EngineImage,
    EngineProfile,
    image_is_pinned,
    sanitize_served_model_name,
)

DIGEST = "sha256:" + "ab" * 32
IMAGE = EngineImage(reference=f"vllm/vllm-openai@{DIGEST}", min_compute_capability="8.0")
HOST = host_facts_from_dict({
    "os": "linux",
    "arch": "x86_64",
    "memory_bytes": 64 * 1024**3,
    "gpus": [
        {"name": "NVIDIA L4", "memory_bytes": 24 * 1024**3, "compute_capability": "8.9"},
        {"name": "NVIDIA L4", "memory_bytes": 24 * 1024**3, "compute_capability": "8.9"},
    ],
})


def clean_profile(**changes: object) -> EngineProfile:
    profile = EngineProfile(
        slug="Qwen/Qwen2.5-Coder-7B-Instruct",
        weights_dir="/srv/models/qwen2.5-coder-7b",
        weight_format="bfloat16",
        image=IMAGE,
        kv_cache_dtype="fp8_e4m3",
        tensor_parallel_size=2,
        gpu_indices=(1, 0),
        max_model_len=8192,
        gpu_memory_utilization=0.85,
        max_num_seqs=16,
        host_port=18000,
        draft=DraftSpec(
            method="draft_model",
            num_speculative_tokens=4,
            weights_dir="/srv/models/qwen2.5-coder-1.5b",
            slug="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        ),
    )
    return replace(profile, **changes)  # type: ignore[arg-type]


def flag(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


def test_clean_profile_yaml_parses_back_with_every_field() -> None:
    document = yaml.safe_load(compose_yaml(clean_profile()))

    assert document["name"] == "specgate-qwen-qwen2-5-coder-7b-instruct"
    assert list(document["services"]) == ["vllm"]
    service = document["services"]["vllm"]
    assert set(service) == {"image", "command", "environment", "volumes", "ports", "ipc", "deploy"}
    assert service["image"] == f"vllm/vllm-openai@{DIGEST}"
    assert service["ports"] == ["127.0.0.1:18000:8000"]
    assert service["environment"] == {"NVIDIA_VISIBLE_DEVICES": "1,0", "HF_HUB_OFFLINE": "1"}
    assert service["volumes"] == [
        "/srv/models/qwen2.5-coder-7b:/models/qwen-qwen2.5-coder-7b-instruct:ro",
        "/srv/models/qwen2.5-coder-1.5b:/models/draft/qwen-qwen2.5-coder-1.5b-instruct:ro",
    ]
    assert service["ipc"] == "host"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "device_ids": ["1", "0"], "capabilities": ["gpu"]}]

    command = service["command"]
    assert all(isinstance(arg, str) for arg in command)
    assert flag(command, "--model") == "/models/qwen-qwen2.5-coder-7b-instruct"
    assert flag(command, "--served-model-name") == "qwen-qwen2.5-coder-7b-instruct"
    assert flag(command, "--host") == "0.0.0.0"
    assert flag(command, "--port") == "8000"
    assert flag(command, "--dtype") == "bfloat16"
    assert "--quantization" not in command
    assert flag(command, "--kv-cache-dtype") == "fp8"
    assert flag(command, "--tensor-parallel-size") == "2"
    assert flag(command, "--max-model-len") == "8192"
    assert flag(command, "--gpu-memory-utilization") == "0.85"
    assert flag(command, "--max-num-seqs") == "16"
    assert "--trust-remote-code" not in command
    spec = json.loads(flag(command, "--speculative-config") or "null")
    assert spec == {
        "model": "/models/draft/qwen-qwen2.5-coder-1.5b-instruct",
        "num_speculative_tokens": 4,
    }


@pytest.mark.parametrize(
    ("weight_format", "compute_dtype", "quantization", "dtype"),
    [
        ("float16", None, None, "float16"),
        ("bfloat16", None, None, "bfloat16"),
        ("awq", "float16", "awq", "float16"),
        ("gptq", "bfloat16", "gptq", "bfloat16"),
        ("compressed-tensors", "bfloat16", "compressed-tensors", "bfloat16"),
        ("fp8", "bfloat16", "fp8", "bfloat16"),
    ],
)
def test_quantization_and_dtype_dispatch(
    weight_format: str, compute_dtype: str | None, quantization: str | None, dtype: str
) -> None:
    profile = clean_profile(
        weight_format=weight_format, compute_dtype=compute_dtype, kv_cache_dtype="auto"
    )
    command = compose_document(profile)["services"]["vllm"]["command"]  # type: ignore[index]

    assert flag(command, "--quantization") == quantization
    assert flag(command, "--dtype") == dtype


@pytest.mark.parametrize(
    ("ours", "emitted"),
    [("auto", None), ("bf16", None), ("fp8_e4m3", "fp8"), ("fp8_e5m2", "fp8_e5m2")],
)
def test_kv_cache_dtype_mapping(ours: str, emitted: str | None) -> None:
    command = compose_document(clean_profile(kv_cache_dtype=ours))["services"]["vllm"]["command"]  # type: ignore[index]

    assert flag(command, "--kv-cache-dtype") == emitted


def test_trust_remote_code_only_when_the_profile_allows_it() -> None:
    allowed = compose_document(clean_profile(trust_remote_code=True))
    assert "--trust-remote-code" in allowed["services"]["vllm"]["command"]  # type: ignore[index]
    assert "--trust-remote-code" not in compose_document(clean_profile())["services"]["vllm"]["command"]  # type: ignore[index]


def test_ngram_drafter_emits_method_and_options_without_a_draft_mount() -> None:
    profile = clean_profile(
        draft=DraftSpec(method="ngram", num_speculative_tokens=3, options=(("prompt_lookup_max", 4),))
    )
    service = compose_document(profile)["services"]["vllm"]  # type: ignore[index]

    assert json.loads(flag(service["command"], "--speculative-config") or "null") == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
    }
    assert len(service["volumes"]) == 1


@pytest.mark.parametrize(
    ("slug", "expected"),
    [
        ("Qwen/Qwen2.5-7B", "qwen-qwen2.5-7b"),
        ("  a//b__c  ", "a-b__c"),
        ("--weird name!!--", "weird-name"),
        ("x" * 300, "x" * 128),
    ],
)
def test_served_model_name_is_sanitized(slug: str, expected: str) -> None:
    assert sanitize_served_model_name(slug) == expected


def test_a_slug_with_nothing_usable_is_an_error() -> None:
    with pytest.raises(ValueError, match="no usable served model name"):
        sanitize_served_model_name("///")


@pytest.mark.parametrize(
    ("reference", "pinned"),
    [
        (f"vllm/vllm-openai@{DIGEST}", True),
        ("vllm/vllm-openai:v0.11.0", True),
        ("registry.local:5000/vllm/vllm-openai:v0.11.0", True),
        ("vllm/vllm-openai:latest", False),
        ("vllm/vllm-openai", False),
        ("registry.local:5000/vllm-openai", False),
    ],
)
def test_image_pinning(reference: str, pinned: bool) -> None:
    assert image_is_pinned(reference) is pinned


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"image": EngineImage("vllm/vllm-openai:latest")}, "not pinned"),
        ({"weight_format": "autoround"}, "autoround"),
        ({"weight_format": "awq", "compute_dtype": "I8"}, "compute dtype"),
        ({"weight_format": "gguf"}, "not one of"),
        ({"kv_cache_dtype": "int8_per_token_head"}, "KV cache dtype"),
        ({"kv_cache_dtype": "fp16"}, "needs model dtype 'float16'"),
        ({"weights_dir": "relative/dir"}, "absolute path"),
    ],
)
def test_the_generator_refuses_what_it_cannot_emit(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ComposeRefused, match=message):
        compose_document(clean_profile(**changes))


class RecordingRunner:
    """Records every call; optionally fails ``up`` the way a broken pull or boot does."""

    def __init__(self, fail_up: bool = False) -> None:
        self.calls: list[tuple[str, Path, Path]] = []
        self.fail_up = fail_up

    def up(self, project_dir: Path, compose_file: Path) -> None:
        self.calls.append(("up", project_dir, compose_file))
        if self.fail_up:
            raise RuntimeError("docker compose up failed: image pull denied")

    def down(self, project_dir: Path, compose_file: Path) -> None:
        self.calls.append(("down", project_dir, compose_file))

    def down_argv(self, project_dir: Path, compose_file: Path) -> None:
        return None

    def logs(self, project_dir: Path, compose_file: Path, tail: int) -> str:
        self.calls.append(("logs", project_dir, compose_file))
        return "vllm-1  | ERROR engine core died"

    @property
    def verbs(self) -> list[str]:
        return [verb for verb, _, _ in self.calls]


def test_compose_project_ups_inside_the_try_and_always_downs(tmp_path: Path) -> None:
    runner = RecordingRunner()
    seen: list[str] = []

    with compose_project(clean_profile(), HOST, tmp_path, runner, seen.append) as project:
        assert runner.verbs == ["up"]
        assert project.base_url == "http://127.0.0.1:18000"
        assert project.compose_file == tmp_path / COMPOSE_FILE_NAME
        assert yaml.safe_load(project.compose_file.read_text()) == compose_document(clean_profile())

    assert seen == ["http://127.0.0.1:18000"]
    assert runner.verbs == ["up", "down"]
    assert runner.calls[0][1:] == (tmp_path, tmp_path / COMPOSE_FILE_NAME)


def test_down_runs_when_up_raises_and_the_error_carries_the_logs(tmp_path: Path) -> None:
    runner = RecordingRunner(fail_up=True)

    with (
        pytest.raises(RuntimeError, match="image pull denied") as caught,
        compose_project(clean_profile(), HOST, tmp_path, runner, lambda url: None),
    ):
        pytest.fail("the body must not run when up failed")

    assert runner.verbs == ["up", "logs", "down"]
    assert any("engine core died" in note for note in caught.value.__notes__)


def test_down_runs_when_the_health_wait_fails(tmp_path: Path) -> None:
    runner = RecordingRunner()

    def never_healthy(url: str) -> None:
        raise TimeoutError(f"{url}/health not ready")

    with (
        pytest.raises(TimeoutError),
        compose_project(clean_profile(), HOST, tmp_path, runner, never_healthy),
    ):
        pytest.fail("the body must not run when health failed")

    assert runner.verbs == ["up", "logs", "down"]


def test_down_runs_when_the_body_raises(tmp_path: Path) -> None:
    runner = RecordingRunner()

    with (
        pytest.raises(KeyboardInterrupt),
        compose_project(clean_profile(), HOST, tmp_path, runner, lambda url: None),
    ):
        raise KeyboardInterrupt

    assert runner.verbs == ["up", "down"]


def test_an_ineligible_profile_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    runner = RecordingRunner()
    one_gpu = replace(HOST, gpus=HOST.gpus[:1])

    with (
        pytest.raises(EngineStartupRefused) as caught,
        compose_project(clean_profile(), one_gpu, tmp_path / "p", runner, lambda url: None),
    ):
        pytest.fail("must not boot")

    assert caught.value.code == "tensor_parallel_exceeds_visible_gpus"
    assert "tensor parallel size 2 needs 2 GPUs; the host shows 1" in str(caught.value)
    assert runner.calls == []
    assert not (tmp_path / "p").exists()


class ServingRunner(RecordingRunner):
    """``up`` starts a loopback server standing in for the container; ``down`` stops it."""

    def __init__(self, port: int, metrics: str) -> None:
        super().__init__()
        self.port = port
        self.metrics = metrics
        self.server: ThreadingHTTPServer | None = None

    def up(self, project_dir: Path, compose_file: Path) -> None:
        super().up(project_dir, compose_file)
        metrics = self.metrics

        class Container(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = metrics.encode() if self.path == "/metrics" else b""
                self.send_response(200 if self.path in {"/health", "/metrics"} else 404)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Container)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self, project_dir: Path, compose_file: Path) -> None:
        super().down(project_dir, compose_file)
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def test_boot_compose_keeps_the_project_up_until_the_engine_closes(tmp_path: Path) -> None:
    port = free_loopback_port()
    metrics = (Path(__file__).parent / "data" / "metrics_after_one_chat.txt").read_text()
    runner = ServingRunner(port, metrics)

    engine = boot_compose(clean_profile(host_port=port), HOST, tmp_path, runner=runner, boot_timeout_s=10)
    try:
        assert runner.verbs == ["up"]
        assert engine.base_url == f"http://127.0.0.1:{port}"
        assert engine.model_id == "qwen-qwen2.5-coder-7b-instruct"
        assert engine.versions()["image"] == IMAGE.reference
        telemetry = engine.telemetry()
        assert telemetry.enabled and telemetry.available
        assert (telemetry.drafted, telemetry.accepted) == (0, 0)
        assert telemetry.num_draft_tokens == 4
    finally:
        engine.close()
    assert runner.verbs == ["up", "down"]


def compose_config(**options: object) -> EngineConfig:
    base: dict[str, object] = {"mode": "compose", "image": IMAGE.reference, "weights_dir": "/srv/m"}
    return EngineConfig(backend="vllm", target="Org/Model-7B").with_options(**{**base, **options})


def test_profile_from_engine_options() -> None:
    config = EngineConfig(
        backend="vllm", target="Org/Model-7B", draft="/srv/d", num_draft_tokens=5
    ).with_options(
        mode="compose", image=IMAGE.reference, weights_dir="/srv/m", weight_format="awq",
        compute_dtype="float16", kv_cache_dtype="fp8_e5m2", tensor_parallel_size=2,
        gpu_indices=[2, 3], max_model_len=2048, gpu_memory_utilization=0.8, max_num_seqs=8,
        trust_remote_code=True, required_gpu_memory_bytes=10,
        image_platforms=["linux/arm64"], image_min_compute_capability="12.1",
    )

    assert profile_from_config(config, host_port=18555) == EngineProfile(
        slug="Org/Model-7B", weights_dir="/srv/m", weight_format="awq",
        image=EngineImage(IMAGE.reference, platforms=frozenset({"linux/arm64"}),
                          min_compute_capability="12.1"),
        compute_dtype="float16", kv_cache_dtype="fp8_e5m2",
        tensor_parallel_size=2, gpu_indices=(2, 3), max_model_len=2048,
        gpu_memory_utilization=0.8, max_num_seqs=8, host_port=18555, trust_remote_code=True,
        draft=DraftSpec(method="draft_model", num_speculative_tokens=5, weights_dir="/srv/d",
                        slug="/srv/d"),
        required_gpu_memory_bytes=10,
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (compose_config(image=None), "needs image="),
        (compose_config(gpu_indices="0"), "gpu_indices must be a list of ints"),
        (compose_config(tensor_parallel_size="2"), "tensor_parallel_size must be an integer"),
        (compose_config(speculative_method="ngram"), "needs num_draft_tokens"),
        (compose_config(image_platforms="linux/arm64"), "image_platforms must be a list"),
    ],
)
def test_bad_compose_options_are_usage_errors(config: EngineConfig, message: str) -> None:
    with pytest.raises(SpecgateInputError, match=message):
        profile_from_config(config, host_port=1)


def test_compose_mode_on_a_host_without_gpus_refuses_before_writing(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"os": "linux", "arch": "x86_64", "memory_bytes": None, "gpus": []}))

    with pytest.raises(EngineStartupRefused) as caught:
        boot(compose_config(host_facts=str(facts)), tmp_path / "work").close()

    assert caught.value.code == "tensor_parallel_exceeds_visible_gpus"
    assert not (tmp_path / "work" / "compose").exists()


COMPOSE_SPEC = f"""
import pytest

@pytest.mark.engine("vllm", mode="compose", target="Org/Model-7B", image="{IMAGE.reference}",
                    weights_dir="/srv/m", tensor_parallel_size=1, gpu_indices=[0])
def test_serve(engine):
    pass
"""
MACOS_REFUSAL = "*host_os_unsupported: vLLM containers with GPUs need linux; host os is 'macos'*"


def test_compose_eligibility_judges_the_host_facts_file_of_the_session(pytester: pytest.Pytester) -> None:
    # This machine runs linux: only the --specgate-host-facts file can make the host macOS.
    pytester.makefile(".json", facts=json.dumps({**HOST.to_dict(), "os": "macos", "source": "file"}))
    pytester.makepyfile(COMPOSE_SPEC)

    result = pytester.runpytest("--specgate-host-facts=facts.json", "-p", "no:cacheprovider")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([MACOS_REFUSAL])


def test_compose_eligibility_judges_the_host_facts_a_hook_answered(pytester: pytest.Pytester) -> None:
    facts = json.dumps({**HOST.to_dict(), "os": "macos", "source": "hook"})
    pytester.makeconftest(f"""
        import json
        import pytest
        from pytest_specgate.contracts.host import host_facts_from_dict

        @pytest.hookimpl(tryfirst=True)
        def pytest_specgate_host_facts(config):
            return host_facts_from_dict(json.loads({facts!r}), source="hook")
    """)
    pytester.makepyfile(COMPOSE_SPEC)

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([MACOS_REFUSAL])


def test_docker_runner_passes_the_project_to_every_compose_command(tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    docker = tmp_path / "docker"
    docker.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "print('log line'); print('warn', file=sys.stderr)\n"
        "sys.exit(1 if sys.argv[-1] == '-d' and sys.argv[3].endswith('fail') else 0)\n"
    )
    docker.chmod(0o755)
    runner = DockerComposeRunner(docker=str(docker), timeout_s=60)
    project, compose_file = tmp_path / "proj", tmp_path / "proj" / COMPOSE_FILE_NAME

    runner.up(project, compose_file)
    assert runner.logs(project, compose_file, 5) == "log line\nwarn\n"
    runner.down(project, compose_file)
    with pytest.raises(subprocess.CalledProcessError):
        runner.up(tmp_path / "fail", compose_file)

    prefix = ["compose", "--project-directory", str(project), "-f", str(compose_file)]
    recorded = [json.loads(line) for line in calls.read_text().splitlines()]
    assert recorded[:3] == [
        [*prefix, "up", "-d"],
        [*prefix, "logs", "--no-color", "--tail", "5"],
        [*prefix, "down", "--remove-orphans"],
    ]


def _recording_docker(tmp_path: Path) -> tuple[DockerComposeRunner, Path]:
    """A ``docker`` that records the last two arguments of every call, one JSON line each."""
    calls = tmp_path / "calls.jsonl"
    docker = tmp_path / "docker"
    docker.write_text(f"#!{sys.executable}\nimport json, sys\n"
                      f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[-2:]) + '\\n')\n")
    docker.chmod(0o755)
    return DockerComposeRunner(docker=str(docker), timeout_s=60), calls


def _calls(calls: Path) -> list[list[str]]:
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def test_a_project_left_normally_runs_down_once_and_releases_its_orphan_watcher(tmp_path: Path) -> None:
    runner, calls = _recording_docker(tmp_path)

    with compose_project(clean_profile(), HOST, tmp_path / "p", runner, lambda url: None):
        assert _calls(calls) == [["up", "-d"]]

    assert _calls(calls) == [["up", "-d"], ["down", "--remove-orphans"]], "the watcher ran down again"


def test_compose_down_runs_from_the_watcher_when_pytest_dies(tmp_path: Path) -> None:
    runner, calls = _recording_docker(tmp_path)
    child = (
        "import os\nfrom pathlib import Path\n"
        "from pytest_specgate.engines.boot import run_if_orphaned\n"
        "from pytest_specgate.engines.vllm.compose import DockerComposeRunner\n"
        f"runner = DockerComposeRunner(docker={runner.docker!r})\n"
        "with run_if_orphaned(runner.down_argv(Path('proj'), Path('proj/compose.yaml'))):\n"
        "    os._exit(0)\n"
    )

    subprocess.run([sys.executable, "-c", child], timeout=60, check=True)

    give_up = time.monotonic() + 20
    while not _calls(calls) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert _calls(calls) == [["down", "--remove-orphans"]]
