"""Reliability trials of the fail-closed promises; each row prints trials and failures.

- teardown: a subprocess pytest holding a booted mock engine (its own process) is
  stopped by SIGKILL, SIGTERM or SIGINT of pytest, SIGKILL of its xdist worker,
  pytest-timeout (thread and signal methods) or the engine crashing, at a seeded
  random moment (during boot or while serving); afterwards no engine process, no
  reaper and no listening port may be left.
- tamper: every sampled single-byte change to a real signed bundle makes the gate
  (under the project's trust policy) refuse the PR body it accepted before the change;
  and every forgery (records edited to qualify and re-manifested with the package's own
  helpers, left with the old signature, unsigned, or re-signed by an unknown key or by a
  key enrolled for another host profile) is refused.
- redaction soak: hypothesis examples of nested documents with planted secrets, and of
  planted text delivered JSON-escaped, percent-encoded, as UTF-16 (with and without a BOM,
  inside binary), gzip-compressed or with NUL and invalid bytes (the strategies of
  tests/evidence/test_evidence_redact.py); no secret may survive.
- shared folder: two pytest runs into one evidence folder at the same time, the second
  finishing after the first; both bundles must verify with every attachment in them.
- download faults: every failure mode of ``fetch_verified`` against the fake hub
  leaves no file behind (no staging residue, no destination).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from benchmarks import REPO_ROOT, Row, pytest_argv, quiet_environment

if TYPE_CHECKING:
    from pytest_specgate.evidence._trusted import TrustedConfig

SEED = 20261202
_STOP_WAIT_S = 60.0

TEARDOWN_SPEC = '''\
import json
import os
import pathlib

import pytest

TRIAL = json.loads(os.environ["SPECGATE_BENCH_TRIAL"])


@pytest.mark.engine(ENGINE_MARKER)
def test_serve_until_stopped(engine):
    pid = engine.pid if hasattr(engine, "pid") else engine.process.pid
    port = int(engine.base_url.rsplit(":", 1)[1])
    with pathlib.Path(TRIAL["pids"]).open("a") as handle:
        handle.write(json.dumps({"pid": pid, "port": port}) + "\\n")
    served = 0
    while True:
        if TRIAL["mode"] == "crash" and served == TRIAL["crash_after"]:
            engine.inject_fault("crash")
        engine.chat([{"role": "user", "content": "keep serving"}], max_tokens=4)
        served += 1
'''

TAMPER_SPEC = '''\
import pytest


@pytest.mark.ac("AC-1", spec="SPEC-BENCH", title="speedup canary")
@pytest.mark.hardware("bench-host")
def test_speedup(evidence):
    evidence.measure("median_speedup", 1.52, "x", at_least=1.4)
    evidence.attach("server.log", "ready on 127.0.0.1\\n")
    evidence.note("engine", "none: a recorded figure")


@pytest.mark.ac("AC-2", spec="SPEC-BENCH", title="acceptance rate")
def test_acceptance(evidence):
    evidence.measure("acceptance_rate", 0.41, at_least=0.3)
'''


def _row(benchmark: str, trials: int, failures: int, goal: str, detail: str) -> Row:
    return Row(
        benchmark=benchmark,
        measured=f"{failures} failures / {trials} trials",
        goal=goal,
        met=trials > 0 and failures == 0,
        detail=detail,
    )


def _import_from(directory: Path, module: str) -> ModuleType:
    """A helper module of the project's own tests (not a package), imported by path."""
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    return importlib.import_module(module)


# --- teardown --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StopMode:
    """One way a run ends: how the trial stops it, and how many trials a full run makes."""

    name: str
    full_trials: int
    description: str


@dataclass(frozen=True)
class TrialEngine:
    """A subprocess engine the trials boot: its marker, how to spot its process, its modes."""

    name: str
    marker: str
    command: bytes
    latest_stop_s: float
    modes: tuple[StopMode, ...]
    needs_module: str | None = None
    shares_model_cache: bool = False

    def available(self) -> bool:
        return self.needs_module is None or importlib.util.find_spec(self.needs_module) is not None


_KILLS = (
    StopMode("sigkill", 20, "SIGKILL of pytest"),
    StopMode("sigterm", 20, "SIGTERM of pytest"),
    StopMode("worker-sigkill", 20, "SIGKILL of the xdist worker holding the engine"),
    StopMode("timeout-thread", 20, "pytest-timeout, thread method (os._exit)"),
)
TRIAL_ENGINES = (
    TrialEngine(
        "mock", '"mock", isolation="subprocess"', b"pytest_specgate.engines.mock", 2.5,
        (*_KILLS, StopMode("sigint", 7, "SIGINT of pytest"),
         StopMode("timeout-signal", 7, "pytest-timeout, signal method"),
         StopMode("crash", 7, "the engine crashing")),
    ),
    TrialEngine(
        "mlx", '"mlx", target="tiny:target"', b"mlx_lm", 5.0,
        tuple(StopMode(mode.name, 5, mode.description) for mode in _KILLS), needs_module="mlx_lm",
        shares_model_cache=True,
    ),
)
# Signalled from here once the engine process exists, after a drawn delay: during boot or after.
_SIGNALLED = {"sigkill": signal.SIGKILL, "sigterm": signal.SIGTERM, "sigint": signal.SIGINT,
              "worker-sigkill": signal.SIGKILL}
_REAPED_WITHIN_S = 15.0


@dataclass(frozen=True)
class TeardownTrial:
    engine: TrialEngine
    mode: str
    stop_after_s: float
    crash_after: int


@dataclass(frozen=True)
class TeardownOutcome:
    trial: TeardownTrial
    engines: tuple[tuple[int, int], ...]
    live_processes: tuple[int, ...]
    listening_ports: tuple[int, ...]
    exit_code: int | None
    stopped_before_serving: bool
    gone_after_s: float

    @property
    def failed(self) -> bool:
        return bool(self.live_processes) or bool(self.listening_ports)


def teardown_trials(engine: TrialEngine, quick: bool, rng: random.Random) -> list[TeardownTrial]:
    """Every stop mode of ``engine`` in turn; the moment (delay after the engine process
    appeared, or the pytest-timeout, which also runs during boot) and the request the engine
    crashes on are drawn from ``rng``."""
    latest_stop_s = 1.0 if quick else engine.latest_stop_s
    counts = {mode.name: 1 if quick else mode.full_trials for mode in engine.modes}
    order = [name for index in range(max(counts.values())) for name in counts if index < counts[name]]
    return [
        TeardownTrial(engine=engine, mode=name, stop_after_s=round(rng.uniform(0.0, latest_stop_s), 3),
                      crash_after=rng.randint(0, 30))
        for name in order
    ]


def process_alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie is dead for our purposes)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")
    return state not in ("Z", "X")


def processes_tagged(tag: bytes, command: bytes = b"") -> set[int]:
    """Live processes whose environment holds ``tag`` (and command line ``command``): every
    engine and reaper a trial started, also one killed before it could report its PID
    (engines inherit the pytest environment)."""
    tagged: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if command and command not in (entry / "cmdline").read_bytes():
                continue
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if tag in environment and process_alive(int(entry.name)):
            tagged.add(int(entry.name))
    return tagged


def listening_ports() -> set[int]:
    """Every TCP port in LISTEN state on this host (IPv4 and IPv6), from /proc/net."""
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _wait_for_engine_process(tag: bytes, command: bytes, process: subprocess.Popen[str],
                             deadline: float) -> int | None:
    while time.monotonic() < deadline and process.poll() is None:
        engines = processes_tagged(tag, command)
        if engines:
            return min(engines)
        time.sleep(0.05)
    return None


def _stop_group(process: subprocess.Popen[str]) -> None:
    """Last resort for a pytest that would not stop: its own session, started here."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _stop(process: subprocess.Popen[str], trial: TeardownTrial, tag: bytes,
          pids_file: Path) -> tuple[int | None, bool]:
    """Let the trial's stop happen (signals from here; timeout and crash inside the run);
    returns pytest's exit code and whether the signal came before the engine was serving."""
    before_serving = False
    try:
        deadline = time.monotonic() + _STOP_WAIT_S
        signum = _SIGNALLED.get(trial.mode)
        engine = (None if signum is None
                  else _wait_for_engine_process(tag, trial.engine.command, process, deadline))
        if signum is not None and engine is not None:
            time.sleep(trial.stop_after_s)
            before_serving = not (pids_file.exists() and pids_file.read_text().strip())
            target = _parent_of(engine) if trial.mode == "worker-sigkill" else process.pid
            if target is not None and process.poll() is None:
                os.kill(target, signum)
        try:
            return process.wait(_STOP_WAIT_S), before_serving
        except subprocess.TimeoutExpired:
            return None, before_serving
    finally:
        _stop_group(process)


def _engines_reported(pids_file: Path) -> tuple[tuple[int, int], ...]:
    if not pids_file.exists():
        return ()
    entries = [json.loads(line) for line in pids_file.read_text().splitlines() if line]
    return tuple((int(entry["pid"]), int(entry["port"])) for entry in entries)


def _survivors(tag: bytes, engines: tuple[tuple[int, int], ...]) -> set[int]:
    return {pid for pid, _ in engines if process_alive(pid)} | processes_tagged(tag)


def run_teardown_trial(project: Path, trial: TeardownTrial, index: int) -> TeardownOutcome:
    """One pytest run stopped the trial's way; an engine (or reaper) still alive
    ``_REAPED_WITHIN_S`` after pytest ended is counted, then killed by PID (every such process
    was started by this run)."""
    pids_file = project / f"engines-{index}.jsonl"
    tag = str(pids_file).encode()
    environment = {
        "SPECGATE_BENCH_TRIAL": json.dumps(
            {"mode": trial.mode, "crash_after": trial.crash_after, "pids": str(pids_file)}
        )
    }
    timeout = "120"
    if trial.mode.startswith("timeout"):
        timeout = f"{max(trial.stop_after_s + 0.5, 0.5):.3f}"
    method = "thread" if trial.mode == "timeout-thread" else "signal"
    workers = ("-n", "1") if trial.mode == "worker-sigkill" else ("-p", "no:xdist")
    cache = project / "models"
    models = (f"--specgate-engine-option=model_cache={cache}",) if trial.engine.shares_model_cache else ()
    argv = pytest_argv("-q", "-p", "no:cacheprovider", *workers, f"--timeout={timeout}",
                       f"--timeout-method={method}", *models, f"test_teardown_{trial.engine.name}.py")
    with (project / f"pytest-{index}.log").open("w") as log:
        process = subprocess.Popen(
            argv,
            cwd=project,
            env=quiet_environment(environment),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        exit_code, before_serving = _stop(process, trial, tag, pids_file)
    ended = time.monotonic()
    engines = _engines_reported(pids_file)
    while _survivors(tag, engines) and time.monotonic() - ended < _REAPED_WITHIN_S:
        time.sleep(0.05)
    gone_after_s = time.monotonic() - ended
    ports_now = listening_ports()
    live = tuple(sorted(_survivors(tag, engines)))
    for pid in live:
        os.kill(pid, signal.SIGKILL)
    return TeardownOutcome(
        trial=trial,
        engines=engines,
        live_processes=live,
        listening_ports=tuple(port for _, port in engines if port in ports_now),
        exit_code=exit_code,
        stopped_before_serving=before_serving or not engines,
        gone_after_s=gone_after_s,
    )


def _mode_summary(engine: TrialEngine, mode: StopMode, outcomes: list[TeardownOutcome]) -> str:
    mine = [o for o in outcomes if o.trial.engine == engine and o.trial.mode == mode.name]
    if not mine:
        return f"{engine.name} {mode.name}: 0 trials"
    left = sum(len(o.live_processes) for o in mine)
    exits = ",".join(sorted({str(o.exit_code) for o in mine}))
    return (f"{engine.name} {mode.name} ({mode.description}): {len(mine)} trials, "
            f"{sum(o.stopped_before_serving for o in mine)} stopped before the engine served, "
            f"{left} engine processes left, "
            f"slowest gone {max(o.gone_after_s for o in mine):.1f}s after pytest ended "
            f"(limit {_REAPED_WITHIN_S:g}s), exit codes {exits}")


@contextmanager
def _sigint_reaches_trials() -> Iterator[None]:
    """A benchmark started in the background (``cmd &``) inherits an ignored SIGINT, and so
    would every pytest it starts: the SIGINT trials would send a signal nobody receives. A
    handler here (not SIG_IGN) gives the children the default action again."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous)


def run_teardown(quick: bool) -> Row:
    """Trials with the mock served by its own process and, where mlx-lm is installed (not in
    quick mode), a real ``mlx_lm.server`` on a tiny local model."""
    rng = random.Random(SEED)
    engines = [engine for engine in TRIAL_ENGINES
               if engine.available() and (engine.name == "mock" or not quick)]
    trials = [trial for engine in engines for trial in teardown_trials(engine, quick, rng)]
    outcomes: list[TeardownOutcome] = []
    with tempfile.TemporaryDirectory(prefix="specgate-bench-teardown-") as tmp, _sigint_reaches_trials():
        project = Path(tmp)
        (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
        for engine in engines:
            spec = TEARDOWN_SPEC.replace("ENGINE_MARKER", engine.marker)
            (project / f"test_teardown_{engine.name}.py").write_text(spec)
        for index, trial in enumerate(trials):
            outcomes.append(run_teardown_trial(project, trial, index))
    failures = [outcome for outcome in outcomes if outcome.failed]
    left = sum(len(o.live_processes) for o in outcomes)
    ports = sum(len(o.listening_ports) for o in outcomes)
    failed = "; ".join(
        f"{o.trial.engine.name} {o.trial.mode} after {o.trial.stop_after_s}s: pids "
        f"{list(o.live_processes)} ports {list(o.listening_ports)}" for o in failures[:3]
    )
    skipped = [engine.name for engine in TRIAL_ENGINES if engine not in engines]
    return _row(
        f"reliability: teardown ({' and '.join(engine.name for engine in engines)} engine processes)",
        len(outcomes),
        len(failures),
        "0 engine processes / ports left",
        f"engine processes left {left}, listening ports left {ports}; "
        + "; ".join(_mode_summary(engine, mode, outcomes) for engine in engines for mode in engine.modes)
        + (f"; not run here: {', '.join(skipped)}" if skipped else "")
        + (f"; failed: {failed}" if failed else ""),
    )


# --- tamper ----------------------------------------------------------------------------------

TAMPER_PYPROJECT = """\
[tool.pytest.ini_options]

[tool.specgate.hosts.bench-host]
description = "any host whose memory the probe can read"
min_memory_gb = 1

[tool.specgate.hosts.other-host]
description = "a GPU host"
min_gpus = 1

[tool.specgate.acs."AC-1"]
profile = "bench-host"

[tool.specgate.acs."AC-2"]

[tool.specgate.trust.signers.bench-host-key]
key = "{bench}"
profiles = ["bench-host"]

[tool.specgate.trust.signers.other-host-key]
key = "{other}"
profiles = ["other-host"]
"""
SIMULATED_HOST = REPO_ROOT / "fixtures" / "hosts" / "linux-x86_64-24gb-nogpu.json"
FORGED_COMMIT = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"


def _git(project: Path, *arguments: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=specgate-bench", "-c", "user.email=bench@example.invalid",
         *arguments],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout.strip()


@dataclass(frozen=True)
class GateCase:
    """A real bundle, the PR body rendered from it, and the gate's inputs that accept it."""

    bundle: Path
    pr_body: Path
    evidence_dir: Path
    required: tuple[str, ...]
    commit: str
    trusted: TrustedConfig | None = None


@dataclass(frozen=True)
class SignedProject:
    """A committed spec project; its pyproject enrolls ``bench`` for bench-host, ``other`` for other-host."""

    path: Path
    commit: str
    keys: dict[str, Path]
    trusted: TrustedConfig


def _key_pair(directory: Path, name: str) -> tuple[Path, str]:
    """A fresh Ed25519 private key file (PEM) and its ``ssh-ed25519`` public line."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    key = Ed25519PrivateKey.generate()
    path = directory / f"{name}.pem"
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return path, key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()


def build_signed_project(root: Path) -> SignedProject:
    from pytest_specgate.evidence._trusted import trusted_config_from_file

    project, keys_dir = root / "project", root / "keys"
    project.mkdir(parents=True)
    keys_dir.mkdir()
    keys, public = {}, {}
    for name in ("bench", "other", "stranger"):
        keys[name], public[name] = _key_pair(keys_dir, name)
    pyproject = TAMPER_PYPROJECT.format(bench=public["bench"], other=public["other"])
    (project / "pyproject.toml").write_text(pyproject)
    (project / ".gitignore").write_text("__pycache__/\nout*/\n*.md\n")
    (project / "test_specs.py").write_text(TAMPER_SPEC)
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-q", "-m", "specs")
    return SignedProject(
        project, _git(project, "rev-parse", "HEAD"), keys,
        trusted_config_from_file(project / "pyproject.toml", "--trusted-config"),
    )


def signed_run(project: SignedProject, name: str, *options: str) -> GateCase:
    """A real pytest run writing evidence into ``name``, signed at session end; ``specgate render``."""
    environment = quiet_environment()
    subprocess.run(
        pytest_argv("-q", "-p", "no:cacheprovider", f"--specgate-evidence={name}",
                    f"--specgate-sign-key={project.keys['bench']}", *options),
        cwd=project.path, env=environment, check=True, capture_output=True,
    )
    evidence_dir = project.path / name
    bundles = [path.parent for path in evidence_dir.glob("*/manifest.json")]
    if len(bundles) != 1:
        raise RuntimeError(f"tamper: expected one bundle under {evidence_dir}, found {bundles}")
    pr_body = project.path / f"{name}.md"
    subprocess.run(
        [sys.executable, "-m", "pytest_specgate.cli", "render", str(bundles[0]), "--out", str(pr_body)],
        cwd=project.path, env=environment, check=True, capture_output=True,
    )
    return GateCase(bundles[0], pr_body, evidence_dir, ("AC-1", "AC-2"), project.commit, project.trusted)


def gate_problems(case: GateCase) -> tuple[str, ...]:
    """Every problem line the gate prints against the case (none when it accepts every required AC)."""
    from pytest_specgate.evidence import GateInputError, evaluate_gate
    from pytest_specgate.evidence._gate import CommitChoice
    from pytest_specgate.evidence._trusted import UNTRUSTED

    try:
        verdict = evaluate_gate(
            case.pr_body, [case.evidence_dir], case.required, CommitChoice(case.commit, "--commit"),
            trusted=case.trusted or UNTRUSTED,
        )
    except GateInputError as error:
        return (f"bad input: {error}",)
    return verdict.problems


def gate_accepts(case: GateCase, honest: tuple[str, ...] = ()) -> bool:
    """True when the gate finds nothing wrong beyond what it finds in the honest run on this host.

    ``honest``: the verdict-policy lines of the untouched run (a host or engine this machine cannot
    make qualify); :func:`honest_baseline` allows no other kind.
    """
    return set(gate_problems(case)) <= set(honest)


def honest_baseline(case: GateCase) -> tuple[str, ...]:
    """What the gate says about the untouched signed run; only verdict-policy lines may be there."""
    problems = gate_problems(case)
    verdict_lines = ("not qualifying under", "outcome")
    other = [line for line in problems if not line.split(": ", 1)[-1].startswith(verdict_lines)]
    if other:
        raise RuntimeError(f"tamper: the untouched signed bundle {case.bundle} fails the gate: {other}")
    return problems


@dataclass(frozen=True)
class Mutation:
    file: str
    offset: int
    new_byte: int


def bundle_files(bundle: Path) -> dict[str, bytes]:
    return {
        path.relative_to(bundle).as_posix(): path.read_bytes()
        for path in sorted(bundle.rglob("*"))
        if path.is_file()
    }


def sample_mutations(files: dict[str, bytes], count: int | None, rng: random.Random) -> list[Mutation]:
    """Every byte position once (``count`` None) or ``count`` positions, each with a new value."""
    positions = [(name, offset) for name, data in files.items() for offset in range(len(data))]
    chosen = positions if count is None or count >= len(positions) else rng.sample(positions, count)
    return [
        Mutation(name, offset, (files[name][offset] + rng.randint(1, 255)) % 256)
        for name, offset in chosen
    ]


@contextmanager
def mutated(path: Path, original: bytes, mutation: Mutation) -> Iterator[None]:
    changed = bytearray(original)
    changed[mutation.offset] = mutation.new_byte
    path.write_bytes(bytes(changed))
    try:
        yield
    finally:
        path.write_bytes(original)


def _gate_verdict_or_crash(case: GateCase, honest: tuple[str, ...]) -> str:
    """A gate that crashes on a tampered file still refuses it, but the crash is reported."""
    try:
        return "accepted" if gate_accepts(case, honest) else "rejected"
    except Exception as error:
        return f"crashed: {type(error).__name__}"


# --- forgeries: what a runner who wants the merge could write, consistent by the unkeyed digests


def _forge_qualifying(record: dict[str, Any]) -> None:
    """The base of every forgery: a diagnostic run on a simulated host made to look qualifying."""
    record.update(qualifying=True, not_qualifying_reasons=[], mode="default")
    record["run"]["diagnostic"] = False
    for test in record["tests"]:
        test["mode"] = "default"


def _forge_backend(record: dict[str, Any]) -> None:
    """Every test's engines rewritten as a real, local vLLM whose version was read."""
    vllm = {
        "backend": "vllm", "model": "Qwen/Qwen3-8B", "config": "vllm model=Qwen/Qwen3-8B",
        "versions": {"vllm": "0.32.0"},
        "identity": {"url": "http://127.0.0.1:8000", "models": [], "version": "0.32.0", "engine": "vllm",
                     "server": "uvicorn", "system_fingerprint": None},
        "simulated": False, "loopback": True, "version_known": True,
    }
    for test in record["tests"]:
        test["engines"] = [dict(vllm)]


def _forge_probe(record: dict[str, Any]) -> None:
    record["host"]["facts"]["source"] = "probe"
    provenance = record["host"].get("provenance")
    if isinstance(provenance, dict):
        provenance.update(origin="probe", simulated=False, detail=None)


def _forge_commit(record: dict[str, Any]) -> None:
    record["source"]["commit"] = FORGED_COMMIT


def _forge_thresholds(record: dict[str, Any]) -> None:
    for row in record["measurements"]:
        row["value"] = 2.5 if row["name"] == "median_speedup" else row["value"]
        row["at_least"] = row["at_least"] and row["at_least"] / 2


FORGED_FIELDS: tuple[tuple[str, Callable[[dict[str, Any]], None]], ...] = (
    ("qualifying: true", lambda record: None),
    ("backend vllm", _forge_backend),
    ("host source probe", _forge_probe),
    ("commit", _forge_commit),
    ("thresholds", _forge_thresholds),
)
SIGNATURE_VARIANTS = (
    "old signature", "unsigned", "signed by an unknown key", "signed by another profile's key"
)


def remanifest(bundle: Path, documents: list[dict[str, Any]]) -> str:
    """Write ``documents`` as the bundle's records, then rebuild statement, ``evidence.md`` and
    manifest around them; the new markdown."""
    from pytest_specgate.evidence._acrecord import AcRecord
    from pytest_specgate.evidence._bundle import (
        MANIFEST_NAME,
        MARKDOWN_NAME,
        STATEMENT_NAME,
        bundle_digest,
        file_entry,
        manifest_document,
    )
    from pytest_specgate.evidence._jsonio import pretty_json, record_json
    from pytest_specgate.evidence._markdown import render_markdown
    from pytest_specgate.evidence._policy import judge
    from pytest_specgate.evidence._record_split import (
        RECORDS_NAME,
        RUN_FACTS_NAME,
        run_facts_document,
        split_records,
    )
    from pytest_specgate.evidence._writer import intoto_statement

    manifest = json.loads((bundle / MANIFEST_NAME).read_text())
    split = split_records(documents)
    lines = {ac_id: record_json(own).encode() for ac_id, own in split.lines}
    (bundle / RECORDS_NAME).write_bytes(b"".join(lines.values()))
    (bundle / RUN_FACTS_NAME).write_text(pretty_json(run_facts_document(split.runs)))
    records = {ac_id: file_entry(data) for ac_id, data in lines.items()}
    typed = [AcRecord.from_json(document, str(document["ac"]["id"])) for document in documents]
    judged = [(record, judge(record)) for record in typed]
    statement = intoto_statement(judged, records, judged[0][0].source.commit or FORGED_COMMIT)
    (bundle / STATEMENT_NAME).write_text(pretty_json(statement))
    run_id, version = manifest["run_id"], manifest["specgate"]
    files = {name: file_entry((bundle / name).read_bytes()) for name in manifest["files"]
             if name != MARKDOWN_NAME}
    markdown = render_markdown(
        [(record, verdict, records[record.ac.id].sha256) for record, verdict in judged],
        bundle_digest(files, run_id, version, records),
    )
    (bundle / MARKDOWN_NAME).write_text(markdown)
    files[MARKDOWN_NAME] = file_entry(markdown.encode())
    (bundle / MANIFEST_NAME).write_text(pretty_json(manifest_document(run_id, files, version, records)))
    return markdown


def forged_case(base: GateCase, work: Path, field: str, edit: Callable[[dict[str, Any]], None]) -> GateCase:
    """A copy of the (diagnostic, simulated-host) base bundle, every record edited, re-manifested."""
    from pytest_specgate.evidence import load_bundle, read_records

    evidence_dir = work / "evidence"
    bundle = evidence_dir / base.bundle.name
    shutil.copytree(base.bundle, bundle)
    records = read_records(load_bundle(bundle))
    documents = []
    for ac in base.required:
        record: dict[str, Any] = json.loads(json.dumps(records[ac].document))
        _forge_qualifying(record)
        edit(record)
        documents.append(record)
    pr_body = work / "PR.md"
    pr_body.write_text(remanifest(bundle, documents))
    commit = FORGED_COMMIT if field == "commit" else base.commit
    return GateCase(bundle, pr_body, evidence_dir, base.required, commit, base.trusted)


def apply_signature(case: GateCase, variant: str, keys: dict[str, Path]) -> None:
    from pytest_specgate.evidence._bundle import SIGNATURE_NAME
    from pytest_specgate.evidence._redact import build_redactor
    from pytest_specgate.evidence._signing import load_signing_key, sign_bundle

    if variant == "old signature":
        return
    (case.bundle / SIGNATURE_NAME).unlink()
    signer = {"signed by an unknown key": "stranger", "signed by another profile's key": "other",
              "re-signed by the enrolled key": "bench"}.get(variant)
    if signer is not None:
        sign_bundle(case.bundle, load_signing_key(keys[signer], {}), build_redactor(None))


@dataclass(frozen=True)
class ForgeryTally:
    trials: int
    accepted: list[str]
    accepted_without_policy: int
    accepted_when_resigned: int


def run_forgeries(
    project: SignedProject, base: GateCase, work: Path, honest: tuple[str, ...]
) -> ForgeryTally:
    """Each forged field with each signature variant; and what no policy, or a lying signer, lets pass."""
    accepted: list[str] = []
    without_policy = resigned = 0
    for index, (field, edit) in enumerate(FORGED_FIELDS):
        for variant in (*SIGNATURE_VARIANTS, "re-signed by the enrolled key"):
            case = forged_case(base, work / f"{index}-{variant.replace(' ', '-')}", field, edit)
            if variant == SIGNATURE_VARIANTS[0]:
                untrusted = case.trusted and dataclasses.replace(case.trusted, trust=None)
                without_policy += gate_accepts(dataclasses.replace(case, trusted=untrusted), honest)
            apply_signature(case, variant, project.keys)
            verdict = _gate_verdict_or_crash(case, honest)
            if variant not in SIGNATURE_VARIANTS:
                resigned += verdict == "accepted"
            elif verdict != "rejected":
                accepted.append(f"{field} / {variant}: {verdict}")
    return ForgeryTally(len(FORGED_FIELDS) * len(SIGNATURE_VARIANTS), accepted, without_policy, resigned)


def run_tamper(quick: bool) -> Row:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="specgate-bench-tamper-") as tmp:
        project = build_signed_project(Path(tmp))
        case = signed_run(project, "out")
        honest = honest_baseline(case)
        files = bundle_files(case.bundle)
        mutations = sample_mutations(files, 50 if quick else None, rng)
        accepted: list[Mutation] = []
        crashes: dict[str, int] = {}
        for mutation in mutations:
            with mutated(case.bundle / mutation.file, files[mutation.file], mutation):
                verdict = _gate_verdict_or_crash(case, honest)
            if verdict == "accepted":
                accepted.append(mutation)
            elif verdict.startswith("crashed"):
                crashes[verdict] = crashes.get(verdict, 0) + 1
        if gate_problems(case) != honest:
            raise RuntimeError("tamper: the restored bundle is no longer judged as before")
        base = signed_run(
            project, "out-diagnostic", "--specgate-diagnostic", f"--specgate-host-facts={SIMULATED_HOST}"
        )
        if gate_accepts(base, honest):
            raise RuntimeError("tamper: a diagnostic run on a simulated host was accepted before any forgery")
        forgeries = run_forgeries(project, base, Path(tmp) / "forgeries", honest)
    sizes = ", ".join(f"{name} {len(data)}B" for name, data in files.items())
    listed = "; ".join(
        f"{m.file}@{m.offset} {files[m.file][m.offset]:#04x}->{m.new_byte:#04x}" for m in accepted[:5]
    )
    detail = (
        f"{len(mutations)} single-byte changes to a signed bundle, {len(accepted)} accepted; "
        f"{forgeries.trials} forgeries ({len(FORGED_FIELDS)} edits x {len(SIGNATURE_VARIANTS)} signature "
        f"variants: {', '.join(SIGNATURE_VARIANTS)}), {len(forgeries.accepted)} accepted; without a trust "
        f"policy {forgeries.accepted_without_policy} of {len(FORGED_FIELDS)} forged bundles pass (the "
        f"digests are unkeyed); re-signed by the enrolled key itself {forgeries.accepted_when_resigned} of "
        f"{len(FORGED_FIELDS)} pass (a signer who lies is believed: signer, not hardware, attestation); "
        f"files: {sizes}; gate crashed (counted as rejected): {crashes or 'never'}"
        + (f"; the honest run itself is refused here for: {'; '.join(honest)} (accepted means: nothing "
           "more than that)" if honest else "")
    )
    if accepted:
        detail += f"; accepted changes (first 5): {listed}"
    if forgeries.accepted:
        detail += f"; accepted forgeries: {'; '.join(forgeries.accepted)}"
    return _row(
        "reliability: tamper (single-byte changes and forgeries rejected by the gate under a trust policy)",
        len(mutations) + forgeries.trials,
        len(accepted) + len(forgeries.accepted),
        "100% rejected",
        detail,
    )


# --- redaction soak --------------------------------------------------------------------------


def run_redaction(quick: bool) -> Row:
    """The redaction properties of tests/evidence, with every example counted instead of the
    first leak stopping the run (no shrinking), so the row can say how many leaked. Each
    example is a nested JSON document and one planted text sent through an encoding."""
    from hypothesis import HealthCheck, Phase, given, settings

    redact_tests = _import_from(REPO_ROOT / "tests" / "evidence", "test_evidence_redact")
    examples = 200 if quick else 10_000
    seen: list[int] = []
    channels: dict[str, int] = {}
    leaks: list[list[str]] = []
    redactor = redact_tests.REDACTOR

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(redact_tests._planted_structure, redact_tests.encoded_plantings)
    def soak(planted: tuple[Any, list[str]], encoded: tuple[str, Any]) -> None:
        structure, cores = planted
        document = json.loads(redactor.json_bytes(structure))
        channel, planting = encoded
        channels[channel] = channels.get(channel, 0) + 1
        seen.append(len(cores) + len(planting.cores))
        survivors = redact_tests._survivors(document, cores)
        survivors += redact_tests.encoded_survivors(channel, planting)
        if survivors:
            leaks.append(survivors)

    soak()
    planted = sum(seen)
    per_channel = ", ".join(f"{name} {count}" for name, count in sorted(channels.items()))
    return _row(
        "reliability: redaction soak (nested JSON + escaped, percent, UTF-16, gzip, NUL encodings)",
        len(seen),
        len(leaks),
        "0 leaks",
        f"{planted} secrets planted across {len(seen)} hypothesis examples (encodings: {per_channel}); "
        f"first leaks: {leaks[:3] or 'none'}",
    )


# --- two runs, one evidence folder -----------------------------------------------------------


def run_shared_folder_trial(project: Path, trial: int) -> str | None:
    """None when both concurrent runs wrote a complete bundle; else what went wrong."""
    from pytest_specgate.evidence import find_bundles, read_records, verify_bundle

    barrier = project / f"barrier-{trial}"
    barrier.mkdir()
    evidence = f"out-{trial}"
    runs = {}
    for name, other in (("first", "second"), ("second", "first")):
        environment = quiet_environment(
            {"BARRIER": str(barrier), "RUN_NAME": name, "OTHER_RUN": other, "EVIDENCE_DIR": evidence}
        )
        runs[name] = subprocess.Popen(
            pytest_argv(f"--specgate-evidence={evidence}", "-p", "no:cacheprovider", "-q"),
            cwd=project, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
    outputs = {name: process.communicate(timeout=_STOP_WAIT_S * 5)[0] for name, process in runs.items()}
    failed = [name for name, process in runs.items() if process.returncode != 0]
    if failed:
        return f"trial {trial}: {failed} exited non-zero: {outputs[failed[0]].strip().splitlines()[-1:]}"
    bundles = find_bundles(project / evidence)
    problems = [problem for bundle in bundles for problem in verify_bundle(bundle)]
    incomplete = [
        reason
        for bundle in bundles
        for reason in read_records(bundle)["AC-1"].document["not_qualifying_reasons"]
        if "attachment" in str(reason)
    ]
    if len(bundles) != 2 or problems or incomplete:
        return f"trial {trial}: {len(bundles)} bundles; {(problems + incomplete)[:2]}"
    return None


def run_shared_folder(quick: bool) -> Row:
    folder_tests = _import_from(REPO_ROOT / "tests" / "evidence", "test_evidence_folder")
    trials = 1 if quick else 10
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="specgate-bench-shared-") as tmp:
        project = Path(tmp)
        (project / "test_shared.py").write_text(folder_tests.SHARED_FOLDER_SPEC)
        (project / ".gitignore").write_text("out-*/\nbarrier-*/\n__pycache__/\n")
        for arguments in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "spec"]):
            _git(project, *arguments)
        for trial in range(trials):
            problem = run_shared_folder_trial(project, trial)
            if problem is not None:
                problems.append(problem)
    return _row(
        "reliability: shared folder, two concurrent runs into one evidence folder",
        trials,
        len(problems),
        "both bundles complete",
        f"{trials} trial(s) of 2 runs attaching the same bytes, the second finishing after the "
        f"first; problems: {problems[:3] or 'none'}",
    )


# --- download faults -------------------------------------------------------------------------


@dataclass(frozen=True)
class DownloadFault:
    name: str
    expected_problem: str
    repo: Callable[[Any, Any], Any]
    token: str | bool
    disk_free: Callable[[Path], int] | None = None


def download_faults(hubfake: ModuleType) -> list[DownloadFault]:
    weights = "model.safetensors"

    def faulted(**faults: Any) -> Callable[[Any, Any], Any]:
        return lambda public, _private: public.with_faults(weights, hubfake.FileFaults(**faults))

    return [
        DownloadFault("401 private repo, no token", "hub-access", lambda _p, private: private, False),
        DownloadFault("sha256 mismatch", "checksum-mismatch", faulted(digest="wrong"), False),
        DownloadFault("missing x-linked-etag", "missing-checksum", faulted(digest="absent"), False),
        DownloadFault("disk full", "disk-space", lambda public, _p: public, False, lambda _where: 0),
        DownloadFault(
            "connection dropped mid-file",
            "transfer",
            faulted(drop_after_bytes=1000, after_drop="refuse"),
            False,
        ),
    ]


def _leftovers(models: Path) -> list[str]:
    return sorted(path.relative_to(models).as_posix() for path in models.rglob("*"))


def run_download_trial(hubfake: ModuleType, fault: DownloadFault, work: Path, seed: int) -> str | None:
    """None when the fetch failed as expected and left nothing; else what went wrong."""
    from pytest_specgate.fetching.weights import WeightVerificationError, fetch_verified

    public = hubfake.FakeRepo.from_contents("bench/tiny-target", hubfake.tiny_model_files(seed=seed))
    private = hubfake.FakeRepo.from_contents(
        "bench/tiny-private", hubfake.tiny_model_files(seed=seed + 1), token="bench-hub-token"
    )
    repo = fault.repo(public, private)
    models = work / "models"
    models.mkdir()
    extra: dict[str, Any] = {} if fault.disk_free is None else {"disk_free": fault.disk_free}
    try:
        with hubfake.running_fake_hub([repo]) as hub:
            try:
                fetch_verified(repo.repo_id, "main", models / "target", token=fault.token,
                               endpoint=hub.base_url, **extra)
            except WeightVerificationError as error:
                if error.problem != fault.expected_problem:
                    return f"{fault.name}: failed with {error.problem}, expected {fault.expected_problem}"
            else:
                return f"{fault.name}: the fetch succeeded"
        left = _leftovers(models)
        return f"{fault.name}: left {left}" if left else None
    finally:
        shutil.rmtree(models, ignore_errors=True)


@contextmanager
def isolated_hub_environment(home: Path) -> Iterator[None]:
    """No stored token or real endpoint may take part, and the retries huggingface_hub logs
    while a fault plays out stay off the table's output; everything is restored afterwards."""
    names = ("HF_TOKEN", "HF_ENDPOINT", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE", "HF_HOME",
             "HF_HUB_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_TELEMETRY")
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(
        {"HF_HOME": str(home), "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    )
    from huggingface_hub.utils import logging as hub_logging

    verbosity = hub_logging.get_verbosity()
    hub_logging.set_verbosity(logging.ERROR)
    try:
        yield
    finally:
        hub_logging.set_verbosity(verbosity)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_download(quick: bool) -> Row:
    hubfake = _import_from(REPO_ROOT / "tests" / "weights", "hubfake")
    per_fault = 1 if quick else 10
    problems: list[str] = []
    faults = download_faults(hubfake)
    with tempfile.TemporaryDirectory(prefix="specgate-bench-download-") as tmp:
        work = Path(tmp)
        with isolated_hub_environment(work / "hf-home"):
            for fault in faults:
                for trial in range(per_fault):
                    problem = run_download_trial(hubfake, fault, work, seed=trial)
                    if problem is not None:
                        problems.append(problem)
    return _row(
        "reliability: download faults leave no partial file",
        per_fault * len(faults),
        len(problems),
        "0 partial files",
        f"{per_fault} trial(s) each of: {', '.join(f.name for f in faults)}; "
        f"problems: {problems[:3] or 'none'}",
    )

