"""Honest runs qualify wherever users really run pytest; hidden code does not (issue 27).

Each row is a real pytest process in a real virtual environment, run the way users run it, on a
committed project with one plain AC; a qualifying row must also pass ``specgate gate
--trusted-config=<HEAD's commit>``. The environments are built once per test session and shared by the
xdist workers (a lock file), each with pytest-specgate installed from a wheel of this checkout and
pytest from its wheel; the other dependencies come from this suite's own site-packages through a
``.pth`` path line, so no environment downloads numpy again.

Run alone: ``pytest -m provenance_matrix -p no:cacheprovider`` (about two minutes on two cores).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_specgate.evidence import load_bundle, read_records

pytestmark = pytest.mark.provenance_matrix

CHECKOUT = Path(__file__).resolve().parents[2]
SUITE_SITE = Path(sysconfig.get_paths()["purelib"])
DISTRO_PYTHON = Path("/usr/bin/python3")
PROJECT_FILES = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "specproj"
version = "0.1"

[tool.setuptools]
packages = ["specproj"]

[tool.pytest.ini_options]
testpaths = ["specs"]
pythonpath = ["."]

[tool.specgate.acs."AC-10"]
""",
    "specproj/__init__.py": "SPEEDUP = 1.5\n",
    "specs/test_spec.py": """\
import pytest

import specproj


@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    evidence.measure("median_speedup", specproj.SPEEDUP, "x", at_least=1.4)
""",
    ".gitignore": "__pycache__/\n.venv/\nout-*/\n*.egg-info/\nbuild/\n.coverage\n",
}
VANISHER = """\
import sys


def pytest_configure(config):
    config.pluginmanager.unregister(sys.modules[__name__])
    del sys.modules[__name__]
"""
_DROPPED_ENV = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "VIRTUAL_ENV", "PYTEST_XDIST_WORKER",
                "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST",
                "COV_CORE_SOURCE", "COV_CORE_CONFIG", "COV_CORE_DATAFILE", "PYTHONSTARTUP")


def _run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600)


def _checked(argv: list[str], cwd: Path | None = None) -> None:
    done = _run(argv, cwd)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"


def _output(argv: list[str]) -> str:
    done = _run(argv)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _pip(python: Path, *args: str) -> None:
    _checked([sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", "-q",
              *args])


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Kit:
    """What the rows share: the built folder and the project's repository."""

    root: Path
    repo: Path

    def built(self, name: str, build: Callable[[Path], None]) -> Path:
        """``root/name``, built by ``build`` once for all workers of this session."""
        target = self.root / name
        with _exclusive(self.root / f"{name}.lock"):
            if not (target / ".built").exists():
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True)
                build(target)
                (target / ".built").touch()
        return target

    def wheels(self) -> Path:
        """A wheel of this checkout, and pytest's, pytest-cov's and coverage's."""
        def build(folder: Path) -> None:
            _checked([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder),
                      str(CHECKOUT)])
            _checked([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(folder),
                      f"pytest=={metadata.version('pytest')}", "pytest-cov", "coverage"])
        return self.built("wheels", build)

    def venv(self, name: str, *, python: Path = Path(sys.executable), where: Path | None = None,
             extra: Callable[[Path], None] | None = None, specgate: str = "wheel") -> Path:
        """A venv with pytest and pytest-specgate (``wheel``, or ``editable`` from a copy of this
        checkout) installed; ``where``: its folder (default: beside the repository)."""
        wheels = self.wheels()

        def build(marker_dir: Path) -> None:
            prefix = where or marker_dir / "venv"
            _checked([str(python), "-m", "venv", "--without-pip", str(prefix)])
            interpreter = prefix / "bin" / "python"
            found = sorted(wheels.glob("*.whl"))
            own = [str(path) for path in found if path.name.startswith(("pytest-", "pytest_cov", "coverage"))]
            _pip(interpreter, "install", "--no-deps", "--no-index", *own)
            if specgate == "wheel":
                _pip(interpreter, "install", "--no-deps", "--no-index",
                     *(str(path) for path in found if path.name.startswith("pytest_specgate")))
            else:
                clone = marker_dir / "specgate-checkout"
                shutil.copytree(CHECKOUT, clone, ignore=shutil.ignore_patterns(
                    ".git", ".venv*", ".tox", "out", "*.egg-info", "__pycache__", "site", "build"))
                _pip(interpreter, "install", "--no-deps", "-e", str(clone))
            if extra is not None:
                extra(interpreter)
            site = Path(_output([str(interpreter), "-c",
                                 "import sysconfig; print(sysconfig.get_paths()['purelib'])"]))
            (site / "_suite_dependencies.pth").write_text(f"{SUITE_SITE}\n")
        built = self.built(name, build)
        return where or built / "venv"


def _git(repo: Path, *args: str) -> str:
    done = _run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], repo)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="session")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "provenance-matrix"
    root.mkdir(exist_ok=True)
    shell = Kit(root, root / "repo" / "project")

    def build(folder: Path) -> None:
        project = folder / "project"
        for name, text in PROJECT_FILES.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        _git(project, "init", "-q")
        _git(project, "add", ".")
        _git(project, "commit", "-q", "-m", "specs")
    shell.built("repo", build)
    return shell


@dataclass(frozen=True)
class Outcome:
    record: dict[str, Any]
    gate: subprocess.CompletedProcess[str]

    @property
    def reasons(self) -> list[str]:
        return list(self.record["not_qualifying_reasons"])


def _run_spec(kit: Kit, row: str, venv: Path, argv: list[str], **env: str) -> Outcome:
    """Run the project's spec as ``argv`` (``{bin}`` is the venv's bin/), then gate its bundle."""
    out = kit.repo / f"out-{row}"
    shutil.rmtree(out, ignore_errors=True)
    environ = {key: value for key, value in os.environ.items() if key not in _DROPPED_ENV}
    command = [word.replace("{bin}", str(venv / "bin")) for word in argv]
    done = _run([*command, "-p", "no:cacheprovider", f"--specgate-evidence={out}"], kit.repo,
                {**environ, **env})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [bundle] = [path for path in out.iterdir() if path.is_dir()]
    record = dict(read_records(load_bundle(bundle))["AC-10"].document)
    body = out / "PR.md"
    body.write_text((bundle / "evidence.md").read_text())
    head = _git(kit.repo, "rev-parse", "HEAD")
    gate = _run([str(venv / "bin" / "specgate"), "gate", f"--pr-body={body}", f"--evidence={bundle}",
                 "--require=AC-10", f"--commit={head}", f"--trusted-config={head}", "--allow-unsigned"],
                kit.repo, environ)
    return Outcome(record, gate)


def _outside_venv(kit: Kit) -> Path:
    return kit.venv("venv-outside", extra=None)


def _distro_venv(kit: Kit) -> Path:
    if not DISTRO_PYTHON.exists():
        pytest.skip(f"no distribution Python here ({DISTRO_PYTHON})")
    return kit.venv("venv-distro", python=DISTRO_PYTHON)


def _editable_project_venv(kit: Kit) -> Path:
    return kit.venv("venv-project-editable",
                    extra=lambda python: _pip(python, "install", "--no-deps", "-e", str(kit.repo)))


def _inside_venv(kit: Kit) -> Path:
    return kit.venv("venv-inside", where=kit.repo / ".venv",
                    extra=lambda python: _pip(python, "install", "--no-deps", "-e", str(kit.repo)))


HONEST: dict[str, tuple[Callable[[Kit], Path], list[str]]] = {
    "console-script": (_outside_venv, ["{bin}/pytest"]),
    "python-m-pytest": (_outside_venv, ["{bin}/python", "-m", "pytest"]),
    "xdist": (_outside_venv, ["{bin}/pytest", "-n", "2"]),
    "coverage": (_outside_venv, ["{bin}/pytest", "--cov=specproj", "--cov-report="]),
    "distro-python": (_distro_venv, ["{bin}/pytest"]),
    "project-editable": (_editable_project_venv, ["{bin}/pytest"]),
    # docs/examples/fleet.yml: python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pytest
    "venv-in-repo-fleet": (_inside_venv, ["{bin}/pytest"]),
}


@pytest.mark.parametrize("row", list(HONEST))
def test_an_honest_setup_qualifies_and_the_gate_accepts_it(kit: Kit, row: str) -> None:
    make, argv = HONEST[row]
    outcome = _run_spec(kit, row, make(kit), argv)
    assert outcome.record["qualifying"] is True, outcome.reasons
    assert outcome.record["run_provenance"]["foreign_modules"] == {}
    assert outcome.gate.returncode == 0, outcome.gate.stdout + outcome.gate.stderr
    assert "specgate gate: accepted AC-10" in outcome.gate.stdout


def test_the_distribution_pythons_linked_sitecustomize_is_recorded_as_the_interpreters(kit: Kit) -> None:
    outcome = _run_spec(kit, "distro-identity", _distro_venv(kit), ["{bin}/pytest"])
    linked = outcome.record["run_provenance"]["interpreter"]["linked"]
    if not Path("/usr/lib/python3/dist-packages").exists() or not linked:
        pytest.skip("this distribution Python links no file out of its standard library")
    assert all(len(fact["sha256"]) == 64 for fact in linked), linked
    assert outcome.record["qualifying"] is True, outcome.reasons


def test_pytest_specgate_installed_editable_does_not_qualify_and_says_why_in_one_line(kit: Kit) -> None:
    venv = kit.venv("venv-specgate-editable", specgate="editable")
    outcome = _run_spec(kit, "specgate-editable", venv, ["{bin}/pytest"])
    assert outcome.record["qualifying"] is False
    [line] = [reason for reason in outcome.reasons if "pytest-specgate" in reason]
    assert line.startswith("pytest-specgate is installed editable from ")
    assert line.endswith("qualifying runs need a built install (pip install pytest-specgate, or a wheel "
                         "built from that checkout)")
    assert not any("pytest_specgate." in reason for reason in outcome.reasons), outcome.reasons
    assert outcome.gate.returncode == 1


def _zip_plugin(folder: Path) -> Path:
    archive = folder / "hidden.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("zipped_plugin.py", "SPEEDUP = 9.9\n")
    return archive


def test_a_plugin_from_a_zip_on_pythonpath_does_not_qualify(kit: Kit, tmp_path: Path) -> None:
    archive = _zip_plugin(tmp_path)
    outcome = _run_spec(kit, "zip", _outside_venv(kit), ["{bin}/pytest", "-p", "zipped_plugin"],
                        PYTHONPATH=str(archive))
    assert outcome.record["run_provenance"]["foreign_causes"]["zipped_plugin"]["cause"] == "not-a-file"
    assert any(reason.startswith("modules imported from something other than a regular file (a zip archive, "
                                 "say): zipped_plugin (") for reason in outcome.reasons), outcome.reasons
    assert any(reason.startswith("PYTHONPATH entries outside") for reason in outcome.reasons)
    assert outcome.gate.returncode == 1


@pytest.mark.parametrize(("how", "seen_as"), [
    # loaded through importlib (no import event) after the plugin: the watcher saw its file run
    ("PYTEST_PLUGINS", "vanisher (executed)"),
    # loaded before the plugin (so before the watcher): found again on sys.path by its -p name
    ("-p", "vanisher (not imported now)"),
])
def test_a_plugin_that_removes_itself_from_sys_modules_does_not_qualify(
    kit: Kit, tmp_path: Path, how: str, seen_as: str
) -> None:
    (tmp_path / "vanisher.py").write_text(VANISHER)
    argv, env = (["{bin}/pytest"], {"PYTEST_PLUGINS": "vanisher"}) if how == "PYTEST_PLUGINS" else (
        ["{bin}/pytest", "-p", "vanisher"], {})
    outcome = _run_spec(kit, f"vanisher{how}", _outside_venv(kit), argv, PYTHONPATH=str(tmp_path), **env)
    foreign = outcome.record["run_provenance"]["foreign_modules"]
    assert seen_as in foreign and "vanisher" not in foreign, foreign
    assert any(reason.startswith("modules imported from outside the repository and every installed "
                                 f"distribution: {seen_as} (") for reason in outcome.reasons), outcome.reasons
    assert outcome.gate.returncode == 1


def test_an_edited_file_of_an_installed_dependency_does_not_qualify(kit: Kit) -> None:
    def edit_pytest(python: Path) -> None:
        package = _output([str(python), "-c", "import _pytest, os; print(os.path.dirname(_pytest.__file__))"])
        skipping = Path(package) / "skipping.py"
        skipping.write_text(skipping.read_text() + "\n# edited after installing\n")

    venv = kit.venv("venv-edited-dependency", extra=edit_pytest)
    outcome = _run_spec(kit, "edited", venv, ["{bin}/pytest"])
    assert outcome.record["run_provenance"]["foreign_causes"]["_pytest.skipping"] == {
        "cause": "edited", "distribution": "pytest"}
    [line] = [reason for reason in outcome.reasons
              if reason.startswith("installed files that no longer hash")]
    assert "_pytest.skipping (<site-packages>/_pytest/skipping.py, of pytest)" in line
    assert line.endswith("; reinstall: pip install --force-reinstall --no-deps pytest")
    assert outcome.gate.returncode == 1
