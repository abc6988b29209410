"""The texts pytest asks for before any test exists: marker docs and option help.

pytest loads the plugin for every command, ``pytest --version --version`` and ``--help``
included, and registers options and markers before it knows whether anything will run.
This module imports nothing, so registering them costs nothing beyond these strings; the
modules that act on markers and options (hardware, host, run modes, engines, evidence)
load when a hook first needs them and take their texts from here.
"""

from __future__ import annotations

BUILTIN_BACKEND_NAMES = ("mock", "mlx", "vllm", "endpoint")
"""The built-in engine backends, in the order help texts list them (engines.registry defines them)."""
DEFAULT_BACKEND = "mock"
ENTRY_POINT_GROUP = "pytest_specgate.backends"

HARDWARE_MARKER_DOC = (
    "hardware(profile=None, *, apple=None, min_memory_gb=None, max_memory_gb=None, "
    "cuda_sm=None, min_cuda_sm=None, min_gpus=None, min_gpu_memory_gb=None, os=None, "
    "macos_min=None, macos_max=None, env=None): the host this spec needs. A host that "
    "does not match skips the spec with every mismatch named; --specgate-require makes "
    "it an error; --specgate-diagnostic runs it as non-qualifying."
)
AC_MARKER_DOC = (
    "ac(id, *, spec=None, title=None, waived_to=None, reason=None): the acceptance criterion "
    "(AC-<n>[a-z] or FR-<n>[.<n>]) this test is evidence for; several tests may share one. "
    "waived_to=<one of [tool.specgate] gates> moves it to a later merge gate and needs reason="
)
ENGINE_MARKER_DOC = (
    "engine(backend=None, *, target=None, draft=None, num_draft_tokens=None, **options): "
    f"the engine the `engine` fixture boots for this test (backend {'|'.join(BUILTIN_BACKEND_NAMES)} "
    f"or one registered in the entry-point group {ENTRY_POINT_GROUP}; default from "
    f"--specgate-engine, else {DEFAULT_BACKEND}); engines with equal arguments are shared."
)
REAL_ENGINE_MARKER_DOC = (
    "real_engine: boots a real inference engine (mlx-lm, vLLM); slow, deselect with "
    "-m 'not real_engine'"
)
COST_MARKER = "specgate_cost"
COST_MARKER_DOC = (
    f"{COST_MARKER}(seconds): about how long this test runs; under xdist's --dist=load the "
    "costliest tests start first, each on its own worker, so a long spec does not start last"
)
MARKER_DOCS = (
    HARDWARE_MARKER_DOC,
    AC_MARKER_DOC,
    ENGINE_MARKER_DOC,
    REAL_ENGINE_MARKER_DOC,
    COST_MARKER_DOC,
)

REQUIRE_HELP = (
    "AC id (repeatable) or 'all': these specs must run; on a host that does not match "
    "their hardware marker they ERROR instead of skipping."
)
DIAGNOSTIC_HELP = "run hardware specs on any host; every evidence record says qualifying: false."
HOST_FACTS_HELP = "JSON file of host facts that replaces the hardware probe (simulate an M4 or a GB10)."
EVIDENCE_HELP = "directory to write the evidence bundle into (one sub-directory per run)."
ALLOW_DIRTY_HELP = "let evidence from a dirty git working tree count as qualifying."
ENGINE_HELP = (
    f"backend for the `engine` fixture: {', '.join(BUILTIN_BACKEND_NAMES)} (default {DEFAULT_BACKEND}), "
    f"or one installed in the entry-point group {ENTRY_POINT_GROUP}."
)
ENDPOINT_HELP = "URL of a running OpenAI-compatible server (implies --specgate-engine endpoint)."
ENDPOINT_FOR_HELP = (
    "CHANGES=URL (repeatable): the running server that serves the endpoint configuration "
    "boot_engine(**CHANGES) or shared_engine(**CHANGES) asks for, e.g. "
    "--specgate-endpoint-for=draft=none,num_draft_tokens=none=http://127.0.0.1:8001 for the "
    "baseline; without one such a request on the endpoint backend is refused."
)
DURATION_SCALE_HELP = (
    "multiply the durations of long specs (e.g. AC-10's 5-minute sustained window) by this "
    "factor; any value other than 1 makes the run non-qualifying."
)
CONFIDENCE_LEVEL_HELP = (
    "confidence level of the intervals a spec judges its figures on (default 0.95); a bound is "
    "passed when the interval clears it, failed when the interval misses it, inconclusive "
    "otherwise. A level below 0.95 never qualifies."
)
ENGINE_OPTION_HELP = (
    "KEY=VALUE (repeatable): a backend option set on every engine of the run, over the "
    "engine marker; VALUE is read as JSON when it parses (e.g. faults='[\"corrupt-spec\"]')."
)
RECORD_REFERENCE_HELP = (
    "Record reference outputs into DIR instead of comparing with them: specs that check "
    "'unchanged from the build before' (SPEC-028 FR-1) ask the engine configured as that "
    "build and write DIR/<name>.json plus DIR/SHA256SUMS (ship them in fixtures/references/)."
)
VLLM_PYTHON_HELP = "Python interpreter that has vLLM installed, for the vllm backend (default: this one)."
SIGN_KEY_HELP = (
    "Ed25519 private key (PEM, or OpenSSH from ssh-keygen -t ed25519) that signs the bundle at "
    "session end (statement.intoto.dsse.json); passphrase from $SPECGATE_SIGN_PASSPHRASE."
)
