"""The mlx backend against a real ``mlx_lm server`` serving the tiny models.

Each boot takes a few seconds on 2 CPU cores, so the engines are shared per
module; the failure-path tests start servers that die (or are stopped) early.
Every test that starts a process checks afterwards that none is left, by PID
and by scanning /proc for command lines naming the test's own directory.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines import EngineBootError, EngineConfig, EngineStartupRefused
from pytest_specgate.engines import mlx as mlx_backend
from pytest_specgate.engines.boot import ManagedProcess
from pytest_specgate.engines.mlx import MlxEngine, boot
from pytest_specgate.fetching.tiny_models import TinyModelPair, tiny_model_pair

pytest.importorskip("mlx_lm", reason="the mlx extra (mlx-lm, mlx[cpu]) is not installed")

PROMPT: list[dict[str, object]] = [
    {"role": "user", "content": "Tell me about the lighthouse keeper."}
]
PROMPTS: list[list[dict[str, object]]] = [
    PROMPT,
    [{"role": "user", "content": "What grows in the garden?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="module")
def pair(cache: Path) -> TinyModelPair:
    return tiny_model_pair(cache)


def _config(
    cache: Path,
    *,
    target: str | None = None,
    draft: str | None = None,
    num_draft_tokens: int | None = None,
    **options: object,
) -> EngineConfig:
    return EngineConfig(
        backend="mlx",
        target=target,
        draft=draft,
        num_draft_tokens=num_draft_tokens,
        options=tuple(sorted({"model_cache": str(cache), **options}.items())),
    )


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[ManagedProcess]:
    """Every server process the backend starts during one test."""
    processes: list[ManagedProcess] = []

    class RecordedProcess(ManagedProcess):
        def __init__(self) -> None:
            super().__init__()
            processes.append(self)

    monkeypatch.setattr(mlx_backend, "ManagedProcess", RecordedProcess)
    return processes


def _all_stopped(processes: list[ManagedProcess]) -> bool:
    return all(p.pid is not None and not _pid_alive(p.pid) for p in processes)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.is_file() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def _processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains ``text`` (a directory unique to one test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and "mlx_lm" in cmdline:
            found.append(int(entry.name))
    return found


def _process_group_members(pgid: int) -> list[int]:
    """PIDs still in process group ``pgid`` (the server and anything it forked)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _port_free(port: int) -> bool:
    """Nothing listens on the port: connecting is refused and it can be bound again.

    SO_REUSEADDR lets the bind ignore connections in TIME_WAIT (the server closed
    them); on Linux it still fails while any socket listens on the port.
    """
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0):
            return False
    except OSError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen()
        except OSError:
            return False
        return True


def _port_of(engine: MlxEngine) -> int:
    return int(engine.base_url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def speculative(
    cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MlxEngine]:
    engine = boot(
        _config(cache, target="tiny:target", draft="tiny:draft", num_draft_tokens=3),
        tmp_path_factory.mktemp("speculative"),
    )
    with engine:
        yield engine


@pytest.fixture(scope="module")
def baseline(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlxEngine]:
    engine = boot(_config(cache, target="tiny:target"), tmp_path_factory.mktemp("baseline"))
    with engine:
        yield engine


def test_boot_serves_chat_on_loopback(speculative: MlxEngine, pair: TinyModelPair) -> None:
    assert speculative.base_url.startswith("http://127.0.0.1:")
    assert speculative.model_id == str(pair.target)
    assert speculative.plan.draft == pair.draft
    result = speculative.chat(PROMPT, max_tokens=12, temperature=0)
    assert result.text
    assert result.finish_reason == "length"
    assert result.completion_tokens == 12
    assert result.prompt_tokens is not None and result.prompt_tokens > 0


def test_stream_matches_chat(speculative: MlxEngine) -> None:
    whole = speculative.chat(PROMPTS[1], max_tokens=16, temperature=0)
    stream = speculative.stream(PROMPTS[1], max_tokens=16, temperature=0)
    deltas = list(stream)
    assert len(deltas) > 1
    assert "".join(deltas) == whole.text
    assert stream.completion_tokens == 16
    assert stream.finish_reason == "length"


def test_telemetry_is_unavailable_not_invented(
    speculative: MlxEngine, baseline: MlxEngine, pair: TinyModelPair
) -> None:
    speculative.chat(PROMPT, max_tokens=8, temperature=0)
    telemetry = speculative.telemetry()
    assert telemetry.available is False
    assert telemetry.source == "unavailable"
    assert (telemetry.drafted, telemetry.accepted, telemetry.acceptance_rate) == (None, None, None)
    assert telemetry.enabled is True
    assert telemetry.draft_model_id == str(pair.draft)
    assert telemetry.num_draft_tokens == 3
    assert baseline.telemetry().enabled is False


def test_versions_name_the_serving_packages(speculative: MlxEngine) -> None:
    from importlib import metadata

    versions = speculative.versions()
    assert versions["backend"] == "mlx"
    assert versions["mlx-lm"] == metadata.version("mlx-lm")
    assert versions["mlx"] == metadata.version("mlx")
    assert versions["mlx_lm.server fingerprint"].startswith(metadata.version("mlx-lm"))
    assert versions["prompt_cache_size"] == "0"  # the fair-arms check compares it between arms


def test_log_is_kept(speculative: MlxEngine) -> None:
    assert speculative.log_path is not None
    assert "Starting httpd at 127.0.0.1" in speculative.log_path.read_text(errors="replace")


def test_greedy_speculative_output_equals_baseline(
    speculative: MlxEngine, baseline: MlxEngine
) -> None:
    for prompt in PROMPTS:
        expected = baseline.chat(prompt, max_tokens=32, temperature=0)
        assert expected.completion_tokens == 32
        assert speculative.chat(prompt, max_tokens=32, temperature=0).text == expected.text


def test_repeated_prompts_keep_the_greedy_output(
    speculative: MlxEngine, baseline: MlxEngine
) -> None:
    """mlx-lm's prompt cache drifts with a draft from the third repeat on; ours is off."""
    assert "--prompt-cache-size" in speculative.process.argv
    expected = baseline.chat(PROMPT, max_tokens=24, temperature=0).text
    repeats = [speculative.chat(PROMPT, max_tokens=24, temperature=0).text for _ in range(4)]
    streamed = speculative.stream(PROMPT, max_tokens=24, temperature=0).text
    assert repeats == [expected] * 4
    assert streamed == expected


def test_identical_draft_also_preserves_greedy_output(
    cache: Path, baseline: MlxEngine, tmp_path: Path, started: list[ManagedProcess]
) -> None:
    config = _config(cache, target="tiny:target", draft="tiny:copy", num_draft_tokens=2)
    engine = boot(config, tmp_path)
    with engine:
        for prompt in PROMPTS:
            expected = baseline.chat(prompt, max_tokens=20, temperature=0).text
            assert engine.chat(prompt, max_tokens=20, temperature=0).text == expected
    assert len(started) == 1 and _all_stopped(started)


def test_close_stops_the_process_group_and_frees_the_port(cache: Path, tmp_path: Path) -> None:
    engine = boot(_config(cache, target="tiny:target"), tmp_path)
    pid, port = engine.process.pid, _port_of(engine)
    assert pid is not None and _pid_alive(pid)
    assert pid in _process_group_members(pid), "the server leads its own process group"
    assert not _port_free(port)
    engine.close()
    engine.close()
    assert not _pid_alive(pid)
    assert _port_free(port)
    assert _process_group_members(pid) == []


@pytest.mark.parametrize(("role", "found"), [("mismatch", "draft 384"), ("permuted", "draft 512")])
def test_tokenizer_mismatch_refuses_before_boot(
    cache: Path, tmp_path: Path, role: str, found: str, started: list[ManagedProcess]
) -> None:
    config = _config(cache, target="tiny:target", draft=f"tiny:{role}")
    with pytest.raises(EngineStartupRefused) as refused:
        boot(config, tmp_path)
    assert refused.value.code == "draft_model_tokenizer_mismatch"
    assert f"target has 512 tokens, {found}" in str(refused.value)
    assert started == []
    assert list(tmp_path.glob("*.log")) == []


def test_capacity_shortfall_refuses_before_boot(
    cache: Path, tmp_path: Path, started: list[ManagedProcess]
) -> None:
    config = _config(
        cache, target="tiny:target", draft="tiny:draft", memory_limit_bytes=100_000
    )
    with pytest.raises(EngineStartupRefused) as refused:
        boot(config, tmp_path)
    assert refused.value.code == "draft_model_capacity_shortfall"
    assert "more than the 100000 B available (option memory_limit_bytes)" in str(refused.value)
    assert started == []


def test_bad_configuration_is_a_usage_error(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(SpecgateInputError, match="needs target="):
        boot(_config(cache), tmp_path)
    with pytest.raises(SpecgateInputError, match=r"unknown option\(s\) \['alpha'\]"):
        boot(_config(cache, target="tiny:target", alpha=0.5), tmp_path)
    with pytest.raises(SpecgateInputError, match="prompt_cache_size must be an integer >= 0"):
        boot(_config(cache, target="tiny:target", prompt_cache_size=-1), tmp_path)
    with pytest.raises(SpecgateInputError, match="unknown tiny model role 'giant'"):
        boot(_config(cache, target="tiny:giant"), tmp_path)
    with pytest.raises(EngineBootError, match="neither a local directory nor in the Hugging Face"):
        boot(_config(cache, target=str(tmp_path / "absent")), tmp_path)


def test_a_server_that_exits_early_is_reported_with_its_log(
    pair: TinyModelPair, tmp_path: Path, started: list[ManagedProcess]
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (broken / name).write_bytes((pair.target / name).read_bytes())
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(EngineBootError) as failed:
        boot(EngineConfig(backend="mlx", target=str(broken)), tmp_path)
    notes = "\n".join(getattr(failed.value, "__notes__", []))
    assert "answers 503" in str(failed.value) and "could not be loaded" in str(failed.value)
    assert "mlx_lm-server-" in notes and "Traceback" in notes
    assert len(started) == 1 and _all_stopped(started)
    assert _processes_mentioning(str(broken)) == []


def test_a_boot_timeout_stops_the_server(
    cache: Path, tmp_path: Path, started: list[ManagedProcess]
) -> None:
    config = _config(cache, target="tiny:target", boot_timeout_s=0.2)
    with pytest.raises(EngineBootError, match=r"not healthy within 0\.2s \(last: ConnectError"):
        boot(config, tmp_path)
    assert len(started) == 1 and _all_stopped(started)


def test_ctrl_c_during_boot_stops_the_server(
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    started: list[ManagedProcess],
) -> None:
    def interrupted(url: str, deadline_s: float, process: ManagedProcess, **_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(mlx_backend, "wait_for_health", interrupted)
    with pytest.raises(KeyboardInterrupt):
        boot(_config(cache, target="tiny:target"), tmp_path)
    assert len(started) == 1 and _all_stopped(started)


def test_measure_acceptance_counts_draft_flags(pair: TinyModelPair) -> None:
    copy = mlx_backend.measure_acceptance(
        pair.target, pair.identical_draft, PROMPTS, num_draft_tokens=3, max_tokens=21
    )
    assert copy.available and copy.source == "mlx_lm.stream_generate:from_draft"
    assert copy.drafted == copy.accepted and copy.acceptance_rate == 1.0
    assert copy.window == "in_process:3_prompts"
    draft = mlx_backend.measure_acceptance(
        pair.target, pair.draft, PROMPTS, num_draft_tokens=3, max_tokens=21
    )
    assert draft.drafted is not None and draft.accepted is not None
    assert 0 < draft.accepted < draft.drafted
    assert draft.acceptance_rate == draft.accepted / draft.drafted
