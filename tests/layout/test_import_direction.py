"""The import-direction contracts in pyproject.toml hold, and would catch an upward import.

``lint-imports`` reads the contracts from ``[tool.importlinter]``; here it runs on the
package as it is (every contract kept) and on a copy with one planted upward import
(the layers contract broken, naming the importer and the imported module).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = (shutil.which("lint-imports", path=str(Path(sys.executable).parent))
                or shutil.which("lint-imports"))

pytestmark = pytest.mark.skipif(LINT_IMPORTS is None,
                                reason="import-linter is not installed (pip install -e '.[dev]')")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def _copy_of_package(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "pytest_specgate", tmp_path / "pytest_specgate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint_with_planted(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over a copy of the package where ``module`` (a path below it) gains ``line``."""
    root = _copy_of_package(tmp_path)
    planted = root / "pytest_specgate" / module
    planted.write_text(planted.read_text() + f"\n{line}  # noqa\n")
    result = _lint_imports(root)
    assert result.returncode == 1, result.stdout + result.stderr
    return result


def test_every_import_contract_is_kept(tmp_path: Path) -> None:
    result = _lint_imports(_copy_of_package(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert "0 broken" in result.stdout


def test_a_planted_upward_import_breaks_the_layers_contract(tmp_path: Path) -> None:
    result = _lint_with_planted(tmp_path, "contracts/host.py", "from pytest_specgate.evidence import _policy")
    assert "pytest_specgate.contracts is not allowed to import pytest_specgate.evidence" in result.stdout
    assert "pytest_specgate.contracts.host -> pytest_specgate.evidence._policy" in result.stdout


def test_measure_may_import_no_engine(tmp_path: Path) -> None:
    """measure shares the first floor with selection: an engine import from it is upward."""
    result = _lint_with_planted(tmp_path, "measure/latency.py", "from pytest_specgate.engines import boot")
    assert "pytest_specgate.measure is not allowed to import pytest_specgate.engines" in result.stdout
