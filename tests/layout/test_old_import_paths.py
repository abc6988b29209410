"""Modules that moved to their layer package keep their old import path for one release.

Each old path warns (DeprecationWarning naming the new home) and hands out the very
objects the new modules define, so ``isinstance`` checks and monkeypatching a
single-home module keep working.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pytest_specgate

OLD_TO_NEW = {
    "pytest_specgate.host": ("HostFacts", "pytest_specgate.contracts.host"),
    "pytest_specgate.hardware": ("evaluate_requirement", "pytest_specgate.selection.hardware"),
    "pytest_specgate.runmode": ("decide_run", "pytest_specgate.contracts.runmode"),
    "pytest_specgate.settings": ("resolve_settings", "pytest_specgate.selection.settings"),
    "pytest_specgate.collection": ("SpecPlan", "pytest_specgate.selection.collection"),
    "pytest_specgate.properties": ("spec_payload", "pytest_specgate.contracts.payload"),
    "pytest_specgate.weights": ("fetch_verified", "pytest_specgate.fetching.weights"),
    "pytest_specgate.models": ("tiny_model_pair", "pytest_specgate.fetching.tiny_models"),
    "pytest_specgate.references": ("ReferenceOutputs", "pytest_specgate.fetching.references"),
    "pytest_specgate.hookspecs": ("SpecgateHookSpecs", "pytest_specgate.plugin.hookspecs"),
    "pytest_specgate.termination": ("install_sigterm_teardown", "pytest_specgate.plugin.termination"),
    "pytest_specgate.engines.registry": ("backend_named", "pytest_specgate.selection.backends"),
    "pytest_specgate.engines.protocol": ("Engine", "pytest_specgate.contracts.engine"),
    "pytest_specgate.engines.capabilities": ("WarmSwap", "pytest_specgate.contracts.capabilities"),
    "pytest_specgate.inputs": ("parse_json", "pytest_specgate.contracts.validation"),
}


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.mark.parametrize(("old", "name", "new"), [(old, *pair) for old, pair in OLD_TO_NEW.items()])
def test_old_path_warns_and_gives_the_new_object(old: str, name: str, new: str) -> None:
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        f"assert getattr(old, {name!r}) is getattr(new, {name!r})\n"
        "print([str(w.message) for w in caught if w.category is DeprecationWarning])\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert f"{old} moved to" in result.stdout
    assert new in result.stdout


def test_a_split_module_names_both_homes_for_a_missing_name() -> None:
    result = _python(
        "import warnings; warnings.simplefilter('ignore')\n"
        "import pytest_specgate.host as host\n"
        "host.no_such_name\n"
    )
    assert result.returncode == 1
    assert ("module 'pytest_specgate.host' has no attribute 'no_such_name' (it moved to "
            "pytest_specgate.contracts.host, pytest_specgate.selection.host_probe)") in result.stderr


def test_patching_through_a_split_old_path_patches_the_new_home() -> None:
    result = _python(
        "import warnings; warnings.simplefilter('ignore')\n"
        "import pytest_specgate.host as old\n"
        "from pytest_specgate.selection import host_probe\n"
        "fake = lambda: 'patched'\n"
        "old.probe_host = fake\n"
        "assert host_probe.probe_host is fake and old.probe_host is fake\n"
    )
    assert result.returncode == 0, result.stderr


def test_every_old_path_is_a_shim_tested_here_and_forbidden_to_the_package() -> None:
    package = Path(pytest_specgate.__file__).parent
    shims = {
        "pytest_specgate." + ".".join(path.relative_to(package).with_suffix("").parts)
        for path in package.rglob("*.py") if "keep_old_path(__name__" in path.read_text(encoding="utf-8")
    }
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
    (old_path_contract,) = [contract for contract in pyproject["tool"]["importlinter"]["contracts"]
                            if contract["name"] == "the package's own code never uses an old import path"]
    assert shims == set(OLD_TO_NEW) == set(old_path_contract["forbidden_modules"])
