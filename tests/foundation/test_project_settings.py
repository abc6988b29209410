"""``[tool.specgate]`` is read once: host profiles and extra redaction patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.selection.settings import load_project_settings


def test_profiles_and_patterns_come_from_one_table(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.specgate.hosts.big]\nmin_memory_gb = 64\n'
                         '[tool.specgate.redact]\npatterns = ["ACME-[0-9]{6}"]\n')
    project = load_project_settings(pyproject)
    assert list(project.profiles) == ["big"]
    assert project.redact_patterns == ("ACME-[0-9]{6}",)
    assert load_project_settings(None).profiles == {}


def test_bad_patterns_name_the_file_and_table(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.specgate.redact]\npatterns = "ACME"\n')
    with pytest.raises(SpecgateInputError, match=r"pyproject.toml: \[tool.specgate.redact\] patterns must "
                                                r"be a list of strings, got 'ACME'"):
        load_project_settings(pyproject)


def test_project_patterns_redact_the_evidence(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.specgate.redact]\npatterns = ["ACME-[0-9]{6}"]\n')
    pytester.makepyfile(test_spec="""
        import pytest

        @pytest.mark.ac("FR-1")
        def test_noted(evidence):
            evidence.note("ticket", "see ACME-123456")
    """)
    out = pytester.path / "out"
    pytester.runpytest(f"--specgate-evidence={out}").assert_outcomes(passed=1)
    written = b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())
    assert b"see " in written and b"ACME-123456" not in written


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[tool.specgate]\ngate = ["PR-A"]\n',
         r"\[tool.specgate\] has no key 'gate' \(did you mean 'gates'\?\); "
         r"it takes acs, backends, fixtures_dir, gates, hosts, redact, spec_paths, sut_paths, trust$"),
        ('[tool.specgate.redact]\npattern = ["x"]\n',
         r"\[tool.specgate.redact\] has no key 'pattern' \(did you mean 'patterns'\?\); it takes patterns$"),
        ('[tool.specgate]\nevidence_dir = "out"\n',
         r"\[tool.specgate\] has no key 'evidence_dir'; "
         r"it takes acs, backends, fixtures_dir, gates, hosts, redact, spec_paths, sut_paths, trust$"),
    ],
)
def test_an_unknown_key_is_one_line_naming_it_and_the_closest_known_one(
    tmp_path: Path, toml: str, message: str
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(toml)
    with pytest.raises(SpecgateInputError, match=f"^{pyproject}: {message}") as error:
        load_project_settings(pyproject)
    assert "\n" not in str(error.value)


def test_a_typo_in_the_project_table_stops_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.specgate]\ngate = ["PR-A", "PR-B"]\n')
    pytester.makepyfile(test_fine="def test_fine():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *pyproject.toml: [[]tool.specgate[]] has no key 'gate' "
                                 "(did you mean 'gates'?); "
                                 "it takes acs, backends, fixtures_dir, gates, hosts, redact, "
                                 "spec_paths, sut_paths, trust"])


@pytest.mark.parametrize(("table", "found"), [
    ("[tool.specgate.backends]\necho = true\n", "found True"),
    ("[tool.specgate.backends]\necho = [\"specgate-echo\"]\n", "found ['specgate-echo']"),
    ("[tool.specgate.backends]\necho = \"\"\n", "found ''"),
    ("[tool.specgate]\nbackends = \"specgate-echo\"\n", "found 'specgate-echo'"),
])
def test_a_wrong_type_in_the_enrolled_backends_stops_the_run(pytester: pytest.Pytester, table: str,
                                                             found: str) -> None:
    pytester.makepyprojecttoml(table)
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert "pyproject.toml: [tool.specgate.backends]" in line and line.endswith(found)


def test_an_enrolled_backend_of_the_right_shape_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.specgate.backends]\necho = "specgate-echo"\n')
    pytester.makepyfile(test_x="def test_x(): pass")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
