"""Run provenance: what shaped a run from outside the repository is recorded, and code that is
neither the repository's nor an installed distribution's disqualifies the run."""

from __future__ import annotations

import base64
import hashlib
from importlib import metadata
from pathlib import Path

import pytest
from evidence_testkit import (
    AC10,
    CLEAN_RUN_PROVENANCE,
    REAL_ENGINE,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    gate,
    git,
)
from provenance_testkit import commit_project, gate_rejection, only_record, run_passing

from pytest_specgate.evidence._ownership import InstalledIndex, Locations
from pytest_specgate.evidence._run_provenance import (
    ENVIRONMENT_VARIABLES,
    foreign_modules,
    run_provenance_reasons,
    specgate_files,
    startup_files,
    unenrolled_backends,
    used_backends,
)

SPEC_IMPORTING = """
import pytest
import outside_helper

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    evidence.measure("median_speedup", outside_helper.SPEEDUP, "x", at_least=1.4)
"""


def _outside(tmp_path: Path, name: str, text: str) -> Path:
    """A folder outside the project (and every distribution) holding one module."""
    folder = tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(text)
    return folder


def test_a_clean_run_records_its_plugins_and_environment_and_qualifies(pytester: pytest.Pytester) -> None:
    commit_project(pytester)
    _, record = run_passing(pytester)
    provenance = record["run_provenance"]
    assert provenance["foreign_modules"] == {} and provenance["conftests_above_rootdir"] == []
    assert "pytest-specgate" in {plugin["distribution"] for plugin in provenance["plugins"]}
    assert set(provenance["environment"]) == set(ENVIRONMENT_VARIABLES)
    assert provenance["specgate"]["distribution"] == "pytest-specgate"
    assert record["qualifying"] is True, record["not_qualifying_reasons"]


def test_a_module_imported_from_a_pythonpath_entry_disqualifies(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _outside(tmp_path, "outside_helper", "SPEEDUP = 2.41\n")
    pytester.syspathinsert(folder)
    commit = commit_project(pytester, **{"test_spec.py": SPEC_IMPORTING})
    bundle, record = run_passing(pytester)
    [(name, where)] = record["run_provenance"]["foreign_modules"].items()
    assert name == "outside_helper" and where.endswith("/elsewhere/outside_helper.py")
    assert "/pytest-of-<USER>/" in where  # redacted like every other path
    assert any(entry.endswith("/elsewhere") for entry in record["run_provenance"]["sys_path_outside"])
    line = gate_rejection(bundle, commit, capsys)
    assert ("modules imported from outside the repository and every installed distribution: "
            f"outside_helper ({where})") in line


SPEC_IMPORTING_IN_THE_TEST = """
import sys

import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_canary(evidence):
    sys.path.insert(0, {folder!r})
    import outside_helper

    evidence.measure("median_speedup", outside_helper.SPEEDUP, "x", at_least=1.4)
"""


def test_a_module_only_an_xdist_worker_imported_reaches_the_controllers_record(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    folder = _outside(tmp_path, "outside_helper", "SPEEDUP = 2.41\n")
    commit_project(pytester, **{"test_spec.py": SPEC_IMPORTING_IN_THE_TEST.format(folder=str(folder))})
    _, record = run_passing(pytester, "-n", "1")
    provenance = record["run_provenance"]
    assert provenance["foreign_modules"]["outside_helper"].endswith("/elsewhere/outside_helper.py")
    assert provenance["foreign_causes"]["outside_helper"] == {"cause": "outside", "distribution": None}
    assert record["qualifying"] is False


def test_a_plugin_loaded_through_pytest_plugins_is_recorded_and_disqualifies(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _outside(tmp_path, "sneaky_plugin", "def pytest_configure(config):\n    pass\n")
    pytester.syspathinsert(folder)
    monkeypatch.setenv("PYTEST_PLUGINS", "sneaky_plugin")
    commit_project(pytester)
    _, record = run_passing(pytester)
    provenance = record["run_provenance"]
    assert provenance["environment"]["PYTEST_PLUGINS"] == "sneaky_plugin"
    assert "sneaky_plugin" in provenance["foreign_modules"]
    assert record["qualifying"] is False


def test_a_self_removing_plugin_named_by_the_ini_files_addopts_is_found_again_and_disqualifies(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # the ini file's -p loads before this plugin (and its import watcher), like one on the command line
    vanisher = ("import sys\n\n\ndef pytest_configure(config):\n"
                "    config.pluginmanager.unregister(sys.modules[__name__])\n    del sys.modules[__name__]\n")
    pytester.syspathinsert(_outside(tmp_path, "vanisher", vanisher))
    commit_project(pytester, **{"pytest.ini": "[pytest]\naddopts = -p vanisher\n"})
    _, record = run_passing(pytester)
    foreign = record["run_provenance"]["foreign_modules"]
    assert foreign["vanisher (not imported now)"].endswith("/elsewhere/vanisher.py"), foreign
    assert record["qualifying"] is False


def test_a_conftest_above_the_rootdir_is_recorded_with_its_digest_and_disqualifies(
    pytester: pytest.Pytester,
) -> None:
    above = "def pytest_configure(config):\n    pass\n"
    (pytester.path / "conftest.py").write_text(above)
    project = pytester.mkdir("project")
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (project / "test_spec.py").write_text('import pytest\n\n@pytest.mark.ac("AC-10")\n'
                                          'def test_canary():\n    pass\n')
    (project / ".gitignore").write_text("__pycache__/\nout/\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "specs")
    result = pytester.runpytest(f"--rootdir={project}", f"--confcutdir={pytester.path}", str(project),
                                f"--specgate-evidence={project / 'out'}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    _, record = only_record(project / "out")
    [conftest] = record["run_provenance"]["conftests_above_rootdir"]
    assert conftest["sha256"] == hashlib.sha256(above.encode()).hexdigest()
    assert record["qualifying"] is False


@pytest.mark.foreign_harness
def test_the_plugin_itself_from_outside_the_project_and_any_distribution_disqualifies(
    pytester: pytest.Pytester,
) -> None:
    """This suite imports pytest_specgate from its checkout, not from the pytester project nor
    (under PYTHONPATH) from the installed distribution: the truth, which every other test here
    sets aside."""
    commit_project(pytester)
    _, record = run_passing(pytester)
    foreign = record["run_provenance"]["foreign_modules"]
    if "pytest_specgate" not in foreign:
        pytest.skip("pytest_specgate is imported from an installed distribution here")
    assert record["qualifying"] is False
    # the reason lists the first few foreign modules by name: in a long-lived xdist worker
    # earlier pytester projects' modules come first, so the record's list is the one to read
    assert any(reason.startswith("modules imported from outside the repository and every installed "
                                 "distribution: ") for reason in record["not_qualifying_reasons"])


def _site(tmp_path: Path, files: dict[str, bytes], recorded: dict[str, bytes]) -> tuple[Path, Path]:
    """A fake site directory with ``files`` and a pytest-specgate dist-info whose RECORD lists
    ``recorded`` (path -> the bytes RECORD's digest is of)."""
    site = tmp_path / "site-packages"
    for name, data in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    info = site / "pytest_specgate-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-specgate\nVersion: 0.1.0\n")
    lines = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip('=')},"
             f"{len(data)}" for name, data in recorded.items()]
    (info / "RECORD").write_text("\n".join([*lines, "pytest_specgate-0.1.0.dist-info/RECORD,,"]) + "\n")
    return site, info


def _locations(site: Path, repo: Path | None = None, stdlib: tuple[Path, ...] = ()) -> Locations:
    installed = InstalledIndex.of([metadata.PathDistribution(path) for path in site.glob("*.dist-info")])
    return Locations(repo=repo, stdlib=stdlib, site=(site,), prefixes=(), installed=installed)


def test_an_edited_installed_plugin_file_differs_from_its_record(tmp_path: Path) -> None:
    original = {"pytest_specgate/__init__.py": b"", "pytest_specgate/_policy.py": b"STRICT = True\n"}
    site, info = _site(tmp_path, {**original, "pytest_specgate/_policy.py": b"STRICT = False\n"}, original)
    facts = specgate_files(metadata.PathDistribution(info), site / "pytest_specgate", _locations(site))
    assert facts["install"] == "distribution" and facts["mismatched"] == ["pytest_specgate/_policy.py"]
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "specgate": facts}) == [
        "installed pytest_specgate files differ from its distribution's RECORD: pytest_specgate/_policy.py"]
    clean_site, clean_info = _site(tmp_path / "clean", original, original)
    untouched = specgate_files(metadata.PathDistribution(clean_info), clean_site / "pytest_specgate",
                               _locations(clean_site))
    assert (untouched["install"], untouched["mismatched"]) == ("distribution", [])


def test_an_editable_install_must_live_in_the_repository(tmp_path: Path) -> None:
    site, info = _site(tmp_path, {}, {})
    repo = tmp_path / "repo"
    (repo / "pytest_specgate").mkdir(parents=True)
    inside = specgate_files(metadata.PathDistribution(info), repo / "pytest_specgate", _locations(site, repo))
    assert (inside["install"], inside["location"]) == ("repository", "<repo>/pytest_specgate")
    elsewhere = specgate_files(metadata.PathDistribution(info), tmp_path / "clone" / "pytest_specgate",
                               _locations(site, repo))
    assert elsewhere["install"] == "elsewhere"
    (info / "direct_url.json").write_text('{"url": "file:///clone", "dir_info": {"editable": true}}')
    editable = specgate_files(metadata.PathDistribution(info), tmp_path / "clone" / "pytest_specgate",
                              _locations(site, repo))
    assert (editable["install"], editable["location"]) == ("editable", (tmp_path / "clone").as_posix())


def test_pytest_specgate_installed_editable_elsewhere_is_one_line_that_says_what_to_do() -> None:
    specgate = {**CLEAN_RUN_PROVENANCE["specgate"], "install": "editable", "location": "/src/specgate"}
    foreign = {f"pytest_specgate.{name}": f"/src/specgate/pytest_specgate/{name}.py"
               for name in ("plugin", "evidence", "cli")}
    reasons = run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "specgate": specgate,
                                      "foreign_modules": {**foreign, "helper": "/opt/helper.py"}})
    assert reasons == [
        "pytest-specgate is installed editable from /src/specgate; qualifying runs need a built install "
        "(pip install pytest-specgate, or a wheel built from that checkout)",
        "modules imported from outside the repository and every installed distribution: helper "
        "(/opt/helper.py); install them as a distribution, or commit them to the repository"]
    # none of its modules foreign (the project under test is pytest-specgate): nothing to say
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "specgate": specgate}) == []


def test_a_module_in_site_packages_that_no_record_lists_is_foreign(tmp_path: Path) -> None:
    import types

    site, _ = _site(tmp_path, {"pytest_specgate/__init__.py": b"", "sitecustomize.py": b"import os\n"},
                    {"pytest_specgate/__init__.py": b""})
    modules = {name: types.SimpleNamespace(__file__=str(site / path))
               for name, path in (("pytest_specgate", "pytest_specgate/__init__.py"),
                                  ("sitecustomize", "sitecustomize.py"))}
    where = _locations(site)
    assert foreign_modules(modules, where) == {"sitecustomize": {
        "path": "<site-packages>/sitecustomize.py", "cause": "unrecorded", "distribution": None}}
    [startup] = startup_files(modules, where, [str(site)])
    assert startup["path"] == "<site-packages>/sitecustomize.py" and startup["distribution"] is None
    assert startup["owner"] is None


def test_a_pth_file_that_runs_code_and_belongs_to_no_distribution_disqualifies(tmp_path: Path) -> None:
    pth = {"evil.pth": b"import os; os.environ['X'] = '1'\n", "paths.pth": b"/opt/lib\n"}
    site, _ = _site(tmp_path, pth, {})
    files = startup_files({}, _locations(site), [str(site)])
    assert [(entry["path"], entry["executes"]) for entry in files] == [
        ("<site-packages>/evil.pth", True), ("<site-packages>/paths.pth", False)]
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "startup_files": files}) == [
        "start-up files that run code and belong to no installed distribution nor the interpreter: "
        "<site-packages>/evil.pth; remove them, or install what they belong to"]


def test_a_sitecustomize_that_deleted_itself_from_sys_modules_is_found_on_the_path(tmp_path: Path) -> None:
    # it runs before the plugin's import watcher, so only the file on sys.path still shows it
    site, _ = _site(tmp_path, {"sitecustomize.py": b"import sys\ndel sys.modules['sitecustomize']\n"}, {})
    files = startup_files({}, _locations(site), [str(tmp_path / "elsewhere"), str(site)])
    assert [(entry["path"], entry["owner"], entry["executes"]) for entry in files] == [
        ("<site-packages>/sitecustomize.py", None, True)]
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "startup_files": files}) == [
        "start-up files that run code and belong to no installed distribution nor the interpreter: "
        "<site-packages>/sitecustomize.py; remove them, or install what they belong to"]
    assert startup_files({}, _locations(site), [str(tmp_path / "elsewhere")]) == []


def test_a_record_without_run_provenance_does_not_qualify() -> None:
    assert run_provenance_reasons(None) == [
        "run provenance unknown: the record does not say what shaped the run from outside the repository"]
    assert run_provenance_reasons(dict(CLEAN_RUN_PROVENANCE)) == []


def test_a_third_party_backend_qualifies_only_when_enrolled_by_name_and_distribution() -> None:
    enrolled = {"sglang": "specgate-sglang"}
    assert unenrolled_backends([("sglang", "specgate_sglang")], enrolled) == []
    assert unenrolled_backends([("sglang", "evil-sglang")], enrolled) == [
        "engine backend 'sglang' comes from evil-sglang, but the trusted configuration enrols it from "
        "specgate-sglang"]
    assert unenrolled_backends([("tgi", "specgate-tgi")], enrolled) == [
        "engine backend 'tgi' (specgate-tgi) is not enrolled in the trusted [tool.specgate.backends]"]


def test_the_backends_a_record_used_are_paired_with_their_recorded_distribution() -> None:
    engine = {"backend": "sglang", "model": "m", "simulated": False}
    record = {"tests": [{"engines": [engine, {**engine, "backend": "mock"}]}, {"engines": None}],
              "run_provenance": {**CLEAN_RUN_PROVENANCE, "backends": {"sglang": "specgate-sglang"}}}
    assert used_backends(record) == [("sglang", "specgate-sglang")]
    assert used_backends({**record, "run_provenance": None}) == [("sglang", None)]


def test_the_gate_refuses_a_third_party_backend_the_trusted_config_does_not_enrol(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({**REAL_ENGINE, "backend": "sglang", "config": "sglang model=tiny-target"})
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.collector.run_provenance = {**CLEAN_RUN_PROVENANCE, "backends": {"sglang": "specgate-sglang"}}
    bundle = run.finish()
    body = tmp_path / "PR.md"
    body.write_text(bundle.markdown)
    args = [f"--pr-body={body}", f"--evidence={bundle.path}", f"--commit={git_repo.commit}",
            "--require=AC-10"]
    plain = tmp_path / "plain.toml"
    plain.write_text('[tool.specgate.acs."AC-10"]\n')
    code, lines, _ = gate(capsys, *args, f"--trusted-config={plain}")
    assert (code, lines) == (1, [
        f"AC-10: not qualifying under the trusted config ({plain}): engine backend 'sglang' "
        "(specgate-sglang) is not enrolled in the trusted [tool.specgate.backends]"])
    enrolled = tmp_path / "enrolled.toml"
    enrolled.write_text('[tool.specgate.backends]\nsglang = "specgate-sglang"\n[tool.specgate.acs."AC-10"]\n')
    assert gate(capsys, *args, f"--trusted-config={enrolled}")[0] == 0
