"""The texts pytest asks for before any test exists: marker docs and option help.

pytest loads the plugin for every command, ``pytest --version --version`` and ``--help``
included, and registers options and markers before it knows whether anything will run.
This module imports nothing, so registering them costs nothing beyond these strings; the
modules that act on markers and options (hardware, host, run modes, engines, evidence)
load when a hook first needs them and take their texts from here.
"""

from __future__ import annotations

BUILTIN_BACKEND_NAMES = ("mock", "mlx", "vllm", "endpoint")
"""The built-in engine backends, in the order help texts list them (the backend table defines them)."""
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

EVIDENCE_HELP = "directory to write the evidence bundle into (one sub-directory per run)."
ENGINE_HELP = (
    f"backend for the `engine` fixture: {', '.join(BUILTIN_BACKEND_NAMES)} (default {DEFAULT_BACKEND}), "
    f"or one installed in the entry-point group {ENTRY_POINT_GROUP}."
)
ENDPOINT_HELP = "URL of a running OpenAI-compatible server (implies --specgate-engine endpoint)."
DURATION_SCALE_HELP = (
    "multiply the durations of long specs (e.g. AC-10's 5-minute sustained window) by this "
    "factor; any value other than 1 makes the run non-qualifying."
)
CONFIDENCE_LEVEL_HELP = (
    "confidence level of the intervals a spec judges its figures on (default 0.95); a bound is "
    "passed when the interval clears it, failed when the interval misses it, inconclusive "
    "otherwise. A level below 0.95 never qualifies."
)
VLLM_PYTHON_HELP = "Python interpreter that has vLLM installed, for the vllm backend (default: this one)."
