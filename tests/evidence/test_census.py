"""Complete means the whole AC: every route that leaves some of its tests uncollected disqualifies.

A path or node id on the command line, ``--ignore``, ``--ignore-glob``, a conftest's
``collect_ignore`` and the ini's ``addopts`` (or ``$PYTEST_ADDOPTS``) never deselect anything:
pytest just does not collect the other tests. The census (a second collection of the configured
testpaths) is what sees them; each route here must be named by the gate as ``not collected``.
"""

from __future__ import annotations

import pytest
from evidence_testkit import git
from provenance_testkit import gate_rejection, only_record

from pytest_specgate.contracts.census import Census, uncovered_spec_paths
from pytest_specgate.evidence._gate import census_scope_reasons
from pytest_specgate.evidence._policy import not_collected
from pytest_specgate.evidence._trusted import TrustedConfigError, trusted_config_from_text

SPEC_A = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_speed(evidence):
    evidence.measure("median_speedup", 1.5, "x", at_least=1.4)
"""
SPEC_B = """
import pytest

@pytest.mark.ac("AC-10", spec="SPEC-028", title="canary")
def test_identity():
    pass
"""
LEFT_OUT = "specs/test_b.py::test_identity"


def _project(pytester: pytest.Pytester, addopts: str = "", conftest: str | None = None) -> str:
    """Two spec files of AC-10 under ``specs/`` (the ini's testpaths), committed."""
    pytester.makepyprojecttoml(f'[tool.pytest.ini_options]\ntestpaths = ["specs"]\n{addopts}')
    specs = pytester.mkdir("specs")
    (specs / "test_a.py").write_text(SPEC_A)
    (specs / "test_b.py").write_text(SPEC_B)
    if conftest is not None:
        (specs / "conftest.py").write_text(conftest)
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\nPR.md\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    return git(pytester.path, "rev-parse", "HEAD")


def test_a_whole_run_is_complete_and_lists_every_test_of_the_ac(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    _, record = only_record(pytester.path / "out")
    completeness = record["completeness"]
    assert completeness["collection"] == {
        "testpaths": ["specs"],
        "tests": ["specs/test_a.py::test_speed", LEFT_OUT],
        "errors": [],
        "problem": None,
    }
    assert completeness["not_collected"] == [] and completeness["complete"] is True
    assert record["qualifying"] is True, record["not_qualifying_reasons"]


@pytest.mark.parametrize(
    ("options", "addopts", "conftest", "selection"),
    [
        (["specs/test_a.py"], "", None, "args specs/test_a.py"),
        (["specs/test_a.py::test_speed"], "", None, "args specs/test_a.py::test_speed"),
        (["--ignore=specs/test_b.py"], "", None, "args specs"),
        (["--ignore-glob=*/test_b.py"], "", None, "args specs"),
        ([], "", 'collect_ignore = ["test_b.py"]\n', "args specs"),
        ([], 'addopts = ["specs/test_a.py"]\n', None, "args specs/test_a.py"),
        ([], 'addopts = ["-o", "python_files=test_a.py"]\n', None, "args specs"),
    ],
    ids=["file-path", "node-id", "--ignore", "--ignore-glob", "collect_ignore", "addopts-path",
         "addopts-ini-override"],
)
def test_each_route_that_leaves_a_test_uncollected_makes_the_ac_incomplete(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], options: list[str], addopts: str,
    conftest: str | None, selection: str,
) -> None:
    commit = _project(pytester, addopts, conftest)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", *options)
    if "-o" in addopts and result.parseoutcomes().get("passed") == 2:
        pytest.skip(f"pytest {pytest.__version__} reads python_files before it applies the ini's "
                    "addopts -o (pytest 9.2 applies it first): the run leaves nothing out")
    result.assert_outcomes(passed=1)
    bundle, record = only_record(pytester.path / "out")
    assert record["completeness"]["not_collected"] == [LEFT_OUT]
    assert record["outcome"] == "incomplete" and record["qualifying"] is False
    line = gate_rejection(bundle, commit, capsys)
    assert (f"incomplete: 1 test(s) of AC-10 in specs were not collected by this run: {LEFT_OUT} "
            f"(selection: {selection})") in line


def test_pytest_addopts_from_the_environment_is_a_route_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester)
    monkeypatch.setenv("PYTEST_ADDOPTS", "--ignore=specs/test_b.py")
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    _, record = only_record(pytester.path / "out")
    assert record["completeness"]["not_collected"] == [LEFT_OUT] and record["qualifying"] is False


def test_a_file_the_census_cannot_collect_leaves_completeness_unknown(pytester: pytest.Pytester) -> None:
    """An ignored file that fails to import might hold tests of any AC: fail closed."""
    _project(pytester, conftest='collect_ignore = ["test_broken.py"]\n')
    (pytester.path / "specs" / "test_broken.py").write_text("raise ImportError('only on the M4')\n")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "broken")
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    _, record = only_record(pytester.path / "out")
    assert record["completeness"]["collection"]["errors"] == ["specs/test_broken.py"]
    assert ("completeness unknown: the full collection of specs could not collect specs/test_broken.py, "
            "so whether they hold tests of AC-10 is unknown") in record["not_qualifying_reasons"]


def test_the_census_leaves_the_run_alone(pytester: pytest.Pytester) -> None:
    """The census imports what the run left out, but no hook of its conftest runs in the run,
    and nothing of the census (its terminal, its cache) reaches the output."""
    conftest = ('collect_ignore = ["test_b.py"]\n'
                'def pytest_terminal_summary(terminalreporter):\n'
                '    terminalreporter.write_line("CONFTEST SUMMARY")\n')
    _project(pytester, conftest=conftest)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.stdout.lines.count("CONFTEST SUMMARY") == 1
    assert not (pytester.path / ".pytest_cache").exists()


def test_not_collected_is_what_the_run_neither_reported_deselected_nor_left_unreached() -> None:
    census = Census(("specs",), {"a": "AC-1", "b": "AC-1", "c": "AC-1", "d": "AC-1", "e": "AC-2"})
    assert not_collected(census.of("AC-1"), ["a"], ["b"], ["c"]) == ["d"]
    assert census.of("AC-2") == ["e"]


def test_a_node_id_leaves_the_rest_of_its_own_file_uncollected(pytester: pytest.Pytester) -> None:
    """The census reuses files the run collected whole; a file named by a node id was not."""
    _project(pytester)
    specs = pytester.path / "specs"
    (specs / "test_a.py").write_text(SPEC_A + SPEC_B.replace("import pytest\n", "").replace(
        "test_identity", "test_second"))
    git(pytester.path, "commit", "-q", "-am", "two in one file")
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", "specs/test_a.py::test_speed",
                       "specs/test_b.py").assert_outcomes(passed=2)
    _, record = only_record(pytester.path / "out")
    assert record["completeness"]["not_collected"] == ["specs/test_a.py::test_second"]


# --- where the census looks: [tool.specgate] spec_paths, judged against the trusted config -------


def test_spec_paths_narrow_the_census_to_where_the_specs_live(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["specs", "unit"]\n'
                               '[tool.specgate]\nspec_paths = ["specs"]\n')
    specs = pytester.mkdir("specs")
    (specs / "test_a.py").write_text(SPEC_A)
    unit = pytester.mkdir("unit")
    (unit / "test_broken.py").write_text("import no_such_module_here\n")
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    pytester.runpytest("specs", "--specgate-evidence=out", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    _, record = only_record(pytester.path / "out")
    assert record["completeness"]["collection"]["testpaths"] == ["specs"]
    assert record["completeness"]["collection"]["errors"] == []


@pytest.mark.parametrize(
    ("collected", "required", "missing"),
    [
        (["specs"], ["specs"], []),
        (["."], ["specs", "more"], []),
        (["specs"], ["specs/canary"], []),
        (["specs/canary"], ["specs"], ["specs"]),
        (["specs"], ["specs", "more"], ["more"]),
        (["acceptance/a", "acceptance/b"], ["acceptance/*"], []),
        ([], ["."], ["."]),
    ],
)
def test_uncovered_spec_paths(collected: list[str], required: list[str], missing: list[str]) -> None:
    assert uncovered_spec_paths(collected, required) == missing


def test_trusted_spec_paths_come_from_spec_paths_else_testpaths_else_the_rootdir() -> None:
    both = ('[tool.pytest.ini_options]\ntestpaths = ["tests", "specs"]\n'
            '[tool.specgate]\nspec_paths = ["specs"]\n')
    assert trusted_config_from_text(both, "base:pyproject.toml", None).spec_paths == ("specs",)
    ini_only = '[tool.pytest.ini_options]\ntestpaths = ["tests", "specs"]\n'
    assert trusted_config_from_text(ini_only, "base:pyproject.toml", None).spec_paths == ("tests", "specs")
    assert trusted_config_from_text("", "base:pyproject.toml", None).spec_paths == (".",)
    with pytest.raises(TrustedConfigError, match=r"spec_paths must be a non-empty list of paths, got \[\]"):
        trusted_config_from_text("[tool.specgate]\nspec_paths = []\n", "base:pyproject.toml", None)
    with pytest.raises(TrustedConfigError, match=r"has no key 'spec_path' \(did you mean 'spec_paths'\?\)"):
        trusted_config_from_text('[tool.specgate]\nspec_path = ["x"]\n', "base:pyproject.toml", None)


def test_a_census_narrower_than_the_trusted_spec_paths_is_refused_by_the_gate() -> None:
    narrowed = {"completeness": {"collection": {"testpaths": ["specs/fast"]}}}
    [reason] = census_scope_reasons(narrowed, ("specs",))
    assert reason == ("the run's census collected specs/fast, not the trusted spec paths specs: "
                      "tests of the AC there were never looked for")
    assert census_scope_reasons({"completeness": {"collection": {"testpaths": ["specs"]}}}, ("specs",)) == []
