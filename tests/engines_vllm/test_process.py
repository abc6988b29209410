"""Process mode without vLLM: command line, config checks, and the boot discipline.

A stand-in server module is installed as ``vllm.entrypoints.openai.api_server``
in a temp dir on PYTHONPATH, so the real boot code (port, health wait, log tail,
process-group teardown, /metrics deltas) runs end to end in milliseconds.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_specgate.contracts.engine import EngineBootError, EngineStartupRefused
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.vllm import boot
from pytest_specgate.engines.vllm.process import (
    VllmEngine,
    process_spec_from_config,
    server_argv,
    speculative_config_of,
)
from pytest_specgate.fetching.tiny_models import TinyModelPair, tiny_model_pair

HERE = Path(__file__).parent


def vllm_config(**changes: object) -> EngineConfig:
    fields: dict[str, object] = {"target": "tiny:target", "draft": "tiny:draft", "num_draft_tokens": 3}
    fields.update({k: changes.pop(k) for k in list(changes) if k in fields})
    config = EngineConfig(backend="vllm", **fields)  # type: ignore[arg-type]
    return config.with_options(**changes) if changes else config


def test_argv_for_a_draft_model_binds_loopback_and_passes_the_speculative_config() -> None:
    spec = process_spec_from_config(vllm_config(), lambda ref: f"/models/{ref[5:]}")
    argv = server_argv(spec, 18001)

    assert argv[:3] == (sys.executable, "-m", "vllm.entrypoints.openai.api_server")
    assert argv[argv.index("--model") + 1] == "/models/target"
    assert argv[argv.index("--served-model-name") + 1] == "tiny:target"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--port") + 1] == "18001"
    assert argv[argv.index("--dtype") + 1] == "float32"
    assert argv[argv.index("--max-model-len") + 1] == "512"
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.15"
    assert "--enforce-eager" in argv
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == {
        "model": "/models/draft", "num_speculative_tokens": 3,
    }


def test_ngram_method_needs_no_draft_model() -> None:
    config = vllm_config(draft=None, speculative_method="ngram", prompt_lookup_max=4, enforce_eager=False)
    spec = process_spec_from_config(config)

    assert speculative_config_of(spec) == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
    }
    assert "--enforce-eager" not in server_argv(spec, 1)
    assert spec.draft_model_id == "ngram"


def test_no_draft_means_no_speculative_config() -> None:
    spec = process_spec_from_config(vllm_config(draft=None, num_draft_tokens=None))

    assert speculative_config_of(spec) is None
    assert "--speculative-config" not in server_argv(spec, 1)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (vllm_config(target=None), "needs target="),
        (vllm_config(num_draft_tokens=None), "needs num_draft_tokens"),
        (vllm_config(speculative_method="eagle"), "must be one of"),
        (vllm_config(speculative_method="ngram"), "takes no draft model"),
        (vllm_config(draft=None, speculative_method="draft_model"), "needs draft="),
        (vllm_config(max_model_len=0), "max_model_len must be a positive integer"),
        (vllm_config(boot_timeout_s="soon"), "boot_timeout_s must be a positive number"),
    ],
)
def test_bad_configs_are_usage_errors(config: EngineConfig, message: str) -> None:
    with pytest.raises(SpecgateInputError, match=message):
        process_spec_from_config(config)


def test_an_unknown_mode_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SpecgateInputError, match="mode must be one of"):
        boot(vllm_config(mode="kubernetes"), tmp_path)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Installs the stand-in server; yields the file its processes write their pids to."""
    site = tmp_path / "site"
    package = site / "vllm" / "entrypoints" / "openai"
    package.mkdir(parents=True)
    for level in (site / "vllm", site / "vllm" / "entrypoints", package):
        (level / "__init__.py").write_text('"""Regular packages, so they shadow an installed vLLM."""\n')
    shutil.copy(HERE / "fake_api_server.py", package / "api_server.py")
    pids = tmp_path / "pids.txt"
    pids.touch()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    monkeypatch.setenv("FAKE_VLLM_PIDS", str(pids))
    monkeypatch.setenv("FAKE_VLLM_METRICS", ":".join(
        str(HERE / "data" / f"metrics_{name}.txt") for name in ("after_boot", "after_one_chat")
    ))
    yield pids


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie nobody reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}


def port_free(base_url: str) -> bool:
    port = int(base_url.rsplit(":", 1)[1])
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def test_boot_chat_telemetry_and_close_leave_nothing_behind(
    fake_vllm: Path, pair: TinyModelPair, tmp_path: Path
) -> None:
    engine = boot(vllm_config(model_cache=str(pair.root.parent)), tmp_path / "work")
    try:
        assert isinstance(engine, VllmEngine)
        assert engine.base_url.startswith("http://127.0.0.1:")
        assert engine.model_id == "tiny:target"
        result = engine.chat([{"role": "user", "content": "hi"}], max_tokens=3, temperature=0)
        assert result.text == "echo tiny:target"
        assert result.token_ids == (1, 2, 3)
        telemetry = engine.telemetry()
        assert (telemetry.drafted, telemetry.accepted) == (27, 14)
        assert telemetry.draft_model_id == "tiny:draft"
        assert engine.spec_decode_window().mean_acceptance_length == pytest.approx(1 + 14 / 9)
        versions = engine.versions()
        assert versions["vllm_server"] == "0.0.fake" and versions["mode"] == "process"
        assert set(versions) >= {"vllm", "torch", "backend", "model"}
        log = (tmp_path / "work" / "vllm-server.log").read_text()
        assert f"fake vllm serving {pair.target} as tiny:target" in log
    finally:
        engine.close()

    [pid] = pids_in(fake_vllm)
    assert not alive(pid)
    assert port_free(engine.base_url)


def test_early_exit_is_a_boot_error_with_the_log_tail(
    fake_vllm: Path, pair: TinyModelPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_VLLM_MODE", "exit")

    with pytest.raises(EngineBootError, match="exited with code 3") as caught:
        boot(vllm_config(model_cache=str(pair.root.parent)), tmp_path).close()

    assert any("Engine core initialization failed" in note for note in caught.value.__notes__)
    assert not any(alive(pid) for pid in pids_in(fake_vllm))


def test_health_timeout_kills_the_whole_process_group(
    fake_vllm: Path, pair: TinyModelPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_VLLM_MODE", "hang")

    with pytest.raises(EngineBootError, match="not healthy within"):
        boot(vllm_config(model_cache=str(pair.root.parent), boot_timeout_s=3), tmp_path).close()

    pids = pids_in(fake_vllm)
    assert len(pids) == 2, "the stand-in should have started a grandchild"
    assert not any(alive(pid) for pid in pids)


def test_tokenizer_mismatch_refuses_before_any_process_starts(
    fake_vllm: Path, pair: TinyModelPair, tmp_path: Path
) -> None:
    config = vllm_config(draft="tiny:permuted", model_cache=str(pair.root.parent))

    with pytest.raises(EngineStartupRefused) as caught:
        boot(config, tmp_path).close()

    assert caught.value.code == "draft_model_tokenizer_mismatch"
    assert pids_in(fake_vllm) == []
    assert not (tmp_path / "vllm-server.log").exists()


def test_a_missing_interpreter_is_a_boot_error_naming_it(pair: TinyModelPair, tmp_path: Path) -> None:
    config = vllm_config(python=str(tmp_path / "no-python"), model_cache=str(pair.root.parent))

    with pytest.raises(EngineBootError, match=r"cannot run the vLLM interpreter .*no-python"):
        boot(config, tmp_path).close()
