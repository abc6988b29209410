"""Pinned fixtures come from the project (its rootdir's ``fixtures/``, or ``[tool.specgate]
fixtures_dir``), never from inside the installed package: a spec using one passes with a built
(non-editable) install run by the ``pytest`` console script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pytest_specgate.contracts.fixtures_dir import configured_fixtures_dir

REPO = Path(__file__).resolve().parents[2]
# The adopter's own AC id, which this checkout's fixtures do not have: only its fixtures can serve it.
PAIRS = (REPO / "fixtures" / "models" / "pairs.json").read_text().replace('"AC-10"', '"AC-77"')
PROMPTS = (REPO / "fixtures" / "prompts" / "spec028-code-iso8601-v1.json").read_text()
SPEC = """
from pytest_specgate.measure import load_named_prompt_set, model_pair


def test_adopter_pinned_fixture():
    pair = model_pair("AC-77")
    prompts = load_named_prompt_set(pair.prompt_sets[0])
    assert pair.target.repo_id.startswith("mlx-community/") and prompts.prompts
"""


def _project(root: Path, fixtures: str = "fixtures", setting: str | None = None) -> None:
    (root / fixtures / "models").mkdir(parents=True)
    (root / fixtures / "prompts").mkdir(parents=True)
    (root / fixtures / "models" / "pairs.json").write_text(PAIRS)
    (root / fixtures / "prompts" / "spec028-code-iso8601-v1.json").write_text(PROMPTS)
    table = "" if setting is None else f"\n[tool.specgate]\nfixtures_dir = {setting}\n"
    (root / "pyproject.toml").write_text(f'[project]\nname = "adopter"\nversion = "0"\n{table}')
    (root / "test_adopter_pinned_fixture.py").write_text(SPEC)


def test_the_rootdir_fixtures_are_the_default(pytester: pytest.Pytester) -> None:
    _project(pytester.path)
    outer = configured_fixtures_dir()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # The inner run's directory is gone with it; the outer run's is back.
    assert configured_fixtures_dir() == outer


def test_fixtures_dir_names_another_directory(pytester: pytest.Pytester) -> None:
    _project(pytester.path, "data/pinned", '"data/pinned"')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_missing_directory_names_where_it_looked_and_the_setting(pytester: pytest.Pytester) -> None:
    _project(pytester.path, "data/pinned")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*{pytester.path / 'fixtures'}: pinned fixtures directory not found; put the project's fixtures "
        "there or name the directory in [[]tool.specgate[]] fixtures_dir (relative to pyproject.toml)*"
    ])


@pytest.mark.parametrize("setting", ["3", '""', '["fixtures"]'])
def test_a_wrong_type_is_a_usage_error(pytester: pytest.Pytester, setting: str) -> None:
    _project(pytester.path, setting=setting)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: *pyproject.toml: [[]tool.specgate[]] fixtures_dir: expected a directory path "
        "(relative to pyproject.toml), found *"
    ])


def test_a_built_install_and_the_pytest_console_script_find_the_projects_fixtures(tmp_path: Path) -> None:
    """The issue's failure: installed from a wheel, run by ``pytest``, the pinned fixture was looked
    for in site-packages. The wheel is built from this checkout and installed (no deps) into a
    fresh venv; its dependencies come from this interpreter's site-packages through a .pth line
    after the venv's own, and ``pytest`` is the console script pip writes."""
    wheels, venv, project = tmp_path / "wheels", tmp_path / "venv", tmp_path / "adopter"
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
    source = tmp_path / "source"
    shutil.copytree(REPO / "pytest_specgate", source / "pytest_specgate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(wheels), str(source)],
        capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("pytest_specgate-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", "--disable-pip-version-check", str(wheel)],
        capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr[-3000:]
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(python), "-c", purelib], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "zz_runner_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = venv / "bin" / "pytest"
    script.write_text(f"#!{python}\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n")
    script.chmod(0o755)
    project.mkdir()
    _project(project)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "PYTHON")) and key != "VIRTUAL_ENV"}
    completed = subprocess.run([str(script), "-p", "no:cacheprovider", "-q"], cwd=project, env=env,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    location = subprocess.run([str(python), "-c", "import pytest_specgate; print(pytest_specgate.__file__)"],
                              cwd=project, env=env, capture_output=True, text=True, check=True).stdout
    assert location.startswith(str(site)), location
    assert "1 passed" in completed.stdout
    shutil.rmtree(venv)
