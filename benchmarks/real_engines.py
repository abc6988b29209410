"""Real engines on the local speculative pair: acceptance, paired median speedup, measured/analytic.

The question AC-10 asks of a pair (does speculation really pay off, and by as
much as the measured acceptance says it should?) is asked here of the pair the
project builds itself (``local-pair:target`` / ``local-pair:draft``), on real
``mlx_lm.server`` and real vLLM-CPU. Each row shows the greedy acceptance, the
paired median speedup with its bootstrap interval, and the measured (pooled)
speedup over the analytic one for the measured acceptance (Leviathan et al.).

mlx: baseline and speculative servers run side by side, pairs interleaved
(ABAB). vLLM-CPU: an idle vLLM server still occupies a core, so two at once
spoil the comparison; the baseline runs alone first, then the speculative
engine alone, and pairs are formed by prompt and round (not interleaved; the
row says so). Acceptance on vLLM comes from ``/metrics`` deltas over the
measured requests; mlx_lm.server has no counters, so its rate is counted in
process with mlx-lm's ``from_draft`` flags on the same prompts and pair.

Skipped (row says why) where the backend is not installed: vLLM needs
``$SPECGATE_VLLM_PYTHON`` naming an interpreter with vllm-cpu (``.ci/run``
builds one in ``.venv-vllm``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import Row

if TYPE_CHECKING:
    from pytest_specgate.engines import Engine, EngineConfig
    from pytest_specgate.measure import Prompt, PromptRunner, RequestSample

GAMMA = 4
MAX_TOKENS = 256
"""The local pair's answers end (EOS) after about 150 tokens, before this budget."""
PROMPTS = 2
ROUNDS = 3
WARMUP = 1
MIN_ACCEPTANCE = 0.7
MIN_MEDIAN_SPEEDUP = 1.3
PROMPT_SET = "spec028-code-iso8601-v1"


@dataclass(frozen=True)
class PairMeasurement:
    """One backend's figures; ``to_row`` turns them into the benchmark table's line."""

    backend: str
    acceptance_rate: float | None
    acceptance_source: str
    median_speedup: float
    ci_low: float | None
    ci_high: float | None
    pooled_speedup: float
    expected_speedup: float | None
    identical: int
    pairs: int
    schedule: str

    @property
    def measured_over_expected(self) -> float | None:
        return None if self.expected_speedup is None else self.pooled_speedup / self.expected_speedup

    def to_row(self) -> Row:
        interval = (f" [{self.ci_low:.2f}, {self.ci_high:.2f}]"
                    if self.ci_low is not None and self.ci_high is not None else "")
        rate = "unknown" if self.acceptance_rate is None else f"{self.acceptance_rate:.2f}"
        versus = ("-" if self.measured_over_expected is None
                  else f"{self.measured_over_expected:.2f} of {self.expected_speedup:.2f}x")
        met = (self.acceptance_rate is not None and self.acceptance_rate >= MIN_ACCEPTANCE
               and self.median_speedup >= MIN_MEDIAN_SPEEDUP and self.identical == self.pairs)
        return Row(
            f"real-{self.backend} (local pair)",
            f"acceptance {rate}, median {self.median_speedup:.2f}x{interval}, measured/analytic {versus}",
            GOAL,
            met,
            f"{self.pairs} pairs ({self.schedule}), greedy outputs identical {self.identical}/{self.pairs}, "
            f"acceptance from {self.acceptance_source}",
        )


def _cost_ratio(target: Path, draft: Path) -> float:
    """Draft/target weight bytes: a CPU decoding step costs about what it reads."""
    from pytest_specgate.engines.mlx import estimate_memory

    return estimate_memory(draft, 1).weights_bytes / estimate_memory(target, 1).weights_bytes


@contextmanager
def _engine(config: EngineConfig, workdir: Path) -> Iterator[Engine]:
    from pytest_specgate.engines import boot_function

    engine = boot_function(config.backend)(config, workdir)
    try:
        yield engine
    finally:
        engine.close()


def _measure(backend: str, options: dict[str, object], rounds: int, warmup: int) -> PairMeasurement:
    from pytest_specgate.engines import EngineConfig
    from pytest_specgate.fetching.tiny_models import LOCAL_PAIR_SPEC, tiny_model_pair
    from pytest_specgate.measure import (
        compare_to_expected,
        engine_arm,
        engine_telemetry,
        load_named_prompt_set,
        run_paired,
    )

    prompts = load_named_prompt_set(PROMPT_SET).prompts[:PROMPTS]
    workdir = Path(tempfile.mkdtemp(prefix=f"specgate-real-{backend}-"))
    try:
        pair = tiny_model_pair(workdir / "models", LOCAL_PAIR_SPEC)
        option_items = tuple(sorted({"model_cache": str(workdir / "models"), **options}.items()))
        baseline_config = EngineConfig(backend, "local-pair:target", options=option_items)
        candidate_config = EngineConfig(backend, "local-pair:target", "local-pair:draft", GAMMA,
                                        options=option_items)
        if backend == "vllm":
            with _engine(baseline_config, workdir / "baseline") as baseline:
                recorded = _recorded(engine_arm(baseline, max_tokens=MAX_TOKENS), prompts, rounds, warmup)
            with _engine(candidate_config, workdir / "candidate") as candidate:
                paired = run_paired(recorded, engine_arm(candidate, max_tokens=MAX_TOKENS), prompts,
                                    rounds, warmup, candidate_telemetry=engine_telemetry(candidate))
            schedule = "baseline alone, then speculative alone"
            acceptance = paired.acceptance
            rate = acceptance.acceptance_rate if acceptance is not None else None
            source = "vLLM /metrics deltas over the measured requests"
        else:
            with _engine(baseline_config, workdir / "baseline") as baseline, \
                    _engine(candidate_config, workdir / "candidate") as candidate:
                paired = run_paired(engine_arm(baseline, max_tokens=MAX_TOKENS),
                                    engine_arm(candidate, max_tokens=MAX_TOKENS), prompts, rounds, warmup)
            from pytest_specgate.engines.mlx import measure_acceptance

            counted = measure_acceptance(pair.target, pair.draft, [p.as_messages() for p in prompts],
                                         num_draft_tokens=GAMMA, max_tokens=MAX_TOKENS)
            rate, schedule = counted.acceptance_rate, "interleaved ABAB"
            source = "mlx-lm from_draft flags, in process, same prompts and pair"
        speedup = paired.speedup()
        expected = (None if rate is None else compare_to_expected(
            paired.pooled_speedup, rate, GAMMA, _cost_ratio(pair.target, pair.draft)).expected.speedup)
        identity = paired.identity()
        return PairMeasurement(
            backend, rate, source, speedup.median, speedup.ci_low, speedup.ci_high,
            paired.pooled_speedup, expected, len(paired.pairs) - len(identity.mismatches),
            len(paired.pairs), schedule,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _recorded(arm: PromptRunner, prompts: Sequence[Prompt], rounds: int, warmup: int) -> PromptRunner:
    """Answer every scheduled request now; the returned arm replays them in schedule order."""
    from pytest_specgate.measure import paired_schedule

    replay = iter([arm(scheduled.prompt) for scheduled in paired_schedule(prompts, rounds, warmup)])

    def answer(prompt: Prompt) -> RequestSample:
        return next(replay)

    return answer


def vllm_python() -> str | None:
    """An interpreter that can import vllm: ``$SPECGATE_VLLM_PYTHON``, else none."""
    named = os.environ.get("SPECGATE_VLLM_PYTHON")
    if not named:
        return None
    probe = subprocess.run([named, "-c", "import vllm"], capture_output=True, check=False, timeout=120)
    return named if probe.returncode == 0 else None


GOAL = f"acceptance >= {MIN_ACCEPTANCE}, median >= {MIN_MEDIAN_SPEEDUP}x, outputs identical"
QUICK_MODE_ROW = "not run (quick mode)"


def _not_run(backend: str, why: str) -> Row:
    return Row(f"real-{backend} (local pair)", QUICK_MODE_ROW if why == "quick" else "skipped", GOAL,
               True, f"real engines take minutes: python -m benchmarks --only=real-{backend}"
               if why == "quick" else why)


def run_mlx(quick: bool) -> Row:
    if quick:
        return _not_run("mlx", "quick")
    try:
        import mlx_lm  # noqa: F401
    except ImportError:
        return _not_run("mlx", "mlx-lm is not installed")
    return _measure("mlx", {}, ROUNDS, WARMUP).to_row()


def run_vllm(quick: bool) -> Row:
    if quick:
        return _not_run("vllm", "quick")
    python = vllm_python()
    if python is None:
        return _not_run("vllm", "set SPECGATE_VLLM_PYTHON to an interpreter with vllm-cpu")
    options = {"python": python, "max_model_len": 1024}
    return _measure("vllm", options, ROUNDS, WARMUP).to_row()
