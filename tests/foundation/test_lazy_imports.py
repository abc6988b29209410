"""Laziness, checked where it lives: ``sys.modules`` of a fresh interpreter.

pytest loads the plugin in every session, so importing it (and collecting specs
with every marker) must not pull in an engine, an HTTP stack or numerical
libraries; each check runs in a subprocess so that what this test process has
already imported cannot hide a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "pytest_specgate.engines.mock",
    "pytest_specgate.engines.mlx",
    "pytest_specgate.engines.vllm",
    "pytest_specgate.engines.endpoint",
    "pytest_specgate.engines.client",
    "pytest_specgate.measure",
    "pytest_specgate.qualification",
    "pytest_specgate.fetching.weights",
    "starlette",
    "uvicorn",
    "httpx",
    "numpy",
    "matplotlib",
    "huggingface_hub",
    "jsonschema",
    "mlx",
    "torch",
    "vllm",
)

BACKENDS = (
    "pytest_specgate.engines.mock",
    "pytest_specgate.engines.mlx",
    "pytest_specgate.engines.vllm",
    "pytest_specgate.engines.endpoint",
)

_REPORT = """
import json, sys
heavy = json.loads(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
"""


def heavy_modules_after(code: str, cwd: Path, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules a fresh interpreter holds after running ``code``."""
    completed = subprocess.run(
        [sys.executable, "-c", code + _REPORT, json.dumps(heavy)],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    found: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize(
    "imports",
    [
        "import pytest_specgate",
        "import importlib, pytest_specgate.plugin as entry\n"
        "for name in entry.pytest_plugins:\n    importlib.import_module(name)",
        "import pytest_specgate.selection.collection",
        "import pytest_specgate.contracts.wire, pytest_specgate.contracts.validation",
    ],
)
def test_importing_the_plugin_loads_no_engine_http_or_numerics(imports: str, tmp_path: Path) -> None:
    assert heavy_modules_after(imports + "\n", tmp_path) == []


def test_collecting_specs_with_every_marker_loads_no_engine(tmp_path: Path) -> None:
    (tmp_path / "test_spec.py").write_text(
        "import pytest\n\n"
        '@pytest.mark.ac("AC-1", spec="SPEC-1", title="laziness")\n'
        '@pytest.mark.hardware(apple="M4", min_memory_gb=16)\n'
        '@pytest.mark.engine("mock", draft="specgate-mock-draft", num_draft_tokens=2)\n'
        "def test_a(engine, evidence):\n"
        "    pass\n"
    )
    code = (
        "import pytest\n"
        "rc = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'test_spec.py'])\n"
        "assert rc == 0, rc\n"
    )
    assert heavy_modules_after(code, tmp_path) == []


def test_booting_one_backend_imports_that_backend_and_no_other(tmp_path: Path) -> None:
    resolve = "from pytest_specgate.engines.backends import boot_function\nboot = boot_function('mock')\n"
    assert heavy_modules_after(resolve, tmp_path, BACKENDS) == []
    code = resolve + (
        "from pathlib import Path\nfrom pytest_specgate.contracts.engine_config import EngineConfig\n"
        "boot(EngineConfig('mock'), Path('.')).close()\n"
    )
    found = heavy_modules_after(code, tmp_path, BACKENDS)
    assert "pytest_specgate.engines.mock" in found
    assert [m for m in found if not m.startswith("pytest_specgate.engines.mock")] == []
