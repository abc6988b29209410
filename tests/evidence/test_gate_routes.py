"""Each route to evidence that must not count, run through the real plugin and then the gate.

The runs here leave host provenance to the plugin's probe, so their records never qualify on
that count alone; every test asserts the gate's line naming the AC and the route's own cause.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import git, reseal_bundle

from pytest_specgate.evidence import find_bundles, verify_bundle
from pytest_specgate.evidence.cli_commands import configure_gate_parser, run_gate

GATES = '[tool.specgate]\ngates = ["PR-A", "PR-B", "PR-C"]\n'
SPECS = """
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-028", title="speeds up")
def test_identity():
    pass

@pytest.mark.ac("AC-1", spec="SPEC-028", title="speeds up")
def test_threshold(evidence):
    evidence.measure("speedup", 1.1, "x", at_least=1.4)

@pytest.mark.ac("AC-1", spec="SPEC-028", title="speeds up")
def test_later():
    pass
"""


def _committed(pytester: pytest.Pytester, specs: str = SPECS) -> str:
    pytester.makepyprojecttoml(GATES)
    pytester.makepyfile(test_specs=specs)
    (pytester.path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    return git(pytester.path, "rev-parse", "HEAD")


def _gate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], commit: str, *extra: str
) -> tuple[int, list[str]]:
    (bundle,) = find_bundles(pytester.path / "out")
    body = pytester.path / "PR.md"
    body.write_text("## Summary\n\n" + (bundle.path / "evidence.md").read_text())
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    capsys.readouterr()
    code = run_gate(
        parser.parse_args([f"--pr-body={body}", f"--evidence={bundle.path}", f"--commit={commit}", *extra])
    )
    return code, capsys.readouterr().out.splitlines()


def _incomplete_line(lines: list[str], what: str, nodeids: str, selection: str) -> None:
    expected = f"incomplete: 1 test(s) of AC-1 {what}: {nodeids} (selection: {selection})"
    problems = [line for line in lines if line.startswith("AC-1: not qualifying under specgate.policy/1: ")]
    assert sum(expected in problem for problem in problems) == 1, lines


@pytest.mark.parametrize(
    ("options", "selection"),
    [
        (["-k", "not threshold"], "args .; -k 'not threshold'"),
        (["--deselect", "test_specs.py::test_threshold"], "args ."),
    ],
    ids=["-k", "--deselect"],
)
def test_a_deselected_test_makes_the_ac_incomplete(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], options: list[str], selection: str
) -> None:
    commit = _committed(pytester)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", *options)
    result.assert_outcomes(passed=2, deselected=1)
    code, lines = _gate(pytester, capsys, commit)
    assert code == 1
    _incomplete_line(lines, "deselected", "test_specs.py::test_threshold", selection)
    assert "AC-1: outcome is incomplete, not passed" in lines


def test_a_test_never_reached_after_x_makes_the_ac_incomplete(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = _committed(pytester)
    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", "-x")
    result.assert_outcomes(passed=1, failed=1)
    code, lines = _gate(pytester, capsys, commit)
    assert code == 1
    _incomplete_line(lines, "not reached", "test_specs.py::test_later", "args .")
    assert "AC-1: outcome is failed, not passed" in lines


def test_deselection_on_xdist_workers_reaches_the_controller(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("xdist")
    commit = _committed(pytester)
    result = pytester.runpytest_subprocess(
        "--specgate-evidence=out", "-p", "no:cacheprovider", "-n", "2", "-k", "not threshold"
    )
    result.assert_outcomes(passed=2)
    code, lines = _gate(pytester, capsys, commit)
    assert code == 1
    _incomplete_line(lines, "deselected", "test_specs.py::test_threshold", "args .; -k 'not threshold'")


def test_a_waiver_on_one_helper_test_waives_nothing(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = SPECS.replace(
        '@pytest.mark.ac("AC-1", spec="SPEC-028", title="speeds up")\ndef test_identity',
        '@pytest.mark.ac("AC-1", waived_to="PR-C", reason="no M4 in CI")\ndef test_identity',
    )
    commit = _committed(pytester, specs)
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider").assert_outcomes(
        passed=2, failed=1
    )
    code, lines = _gate(
        pytester, capsys, commit, "--gate=PR-A", f"--trusted-config={pytester.path / 'pyproject.toml'}"
    )
    assert code == 1
    assert lines[1] == "AC-1: outcome is failed, not passed"
    assert (
        "waiver does not count: every test of AC-1 must state the same waiver, not stated by "
        "test_specs.py::test_later, test_specs.py::test_threshold"
    ) in lines[2]


def test_a_waiver_to_an_undeclared_gate_is_a_usage_error_naming_the_test(pytester: pytest.Pytester) -> None:
    specs = SPECS.replace(
        'title="speeds up")\ndef test_later', 'waived_to="PR-ZZZ", reason="later")\ndef test_later'
    )
    _committed(pytester, specs)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: test_specs.py::test_later: @pytest.mark.ac(waived_to='PR-ZZZ'): PR-ZZZ is not a declared "
            f"gate; {pytester.path / 'pyproject.toml'} declares [tool.specgate] gates = PR-A, PR-B, PR-C"
        ]
    )


def test_undeclared_gates_in_pyproject_are_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.specgate]\ngates = ["PR-B", "PR-A"]\n')
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.specgate[]] gates must be in merge order, but PR-A follows PR-B*"])


def test_the_gate_refuses_an_undeclared_gate(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = _committed(pytester)
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")
    body = Path(pytester.path / "PR.md")
    body.write_text("")
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    pyproject = pytester.path / "pyproject.toml"
    code = run_gate(
        parser.parse_args(
            [
                f"--pr-body={body}",
                "--evidence=out",
                f"--commit={commit}",
                "--gate=PR-D",
                f"--trusted-config={pyproject}",
            ]
        )
    )
    assert code == 2
    assert capsys.readouterr().err == (
        f"specgate gate: error: --gate: PR-D is not a declared gate; {pyproject} declares "
        "[tool.specgate] gates = PR-A, PR-B, PR-C\n"
    )


def test_commit_routes_on_a_bundle_the_plugin_wrote(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = _committed(pytester)
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", "-k", "identity")
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    code, _ = _gate(pytester, capsys, commit[:7])
    assert code == 2
    code, lines = _gate(pytester, capsys, "0" * 40, "--require=AC-1")
    assert (code, lines[1]) == (1, f"AC-1: evidence is for commit {commit}, not {'0' * 40}")
    (bundle,) = find_bundles(pytester.path / "out")
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    arguments = parser.parse_args([f"--pr-body={bundle.path / 'evidence.md'}", f"--evidence={bundle.path}"])
    capsys.readouterr()
    # Outside GitHub Actions, without --commit: HEAD of the checkout the gate runs in.
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(pytester.path)
    run_gate(arguments)
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (f"specgate gate: policy specgate.policy/1; commit {commit} "
                     f"(from HEAD of {pytester.path} (outside GitHub Actions))"), first
    # Inside Actions nothing is guessed.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert run_gate(arguments) == 2
    assert capsys.readouterr().err == (
        "specgate gate: error: no commit to check the evidence against: pass --commit=<40-hex sha> "
        "(or set $GITHUB_SHA; outside GitHub Actions the gate takes HEAD of a git checkout in the current "
        "directory)\n"
    )
    # Outside a checkout there is no HEAD to take.
    monkeypatch.chdir(pytester.path.parent)
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert run_gate(arguments) == 2 and "no commit to check" in capsys.readouterr().err


def test_a_plugin_written_record_edited_to_qualify_and_resealed_is_rejected(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = _committed(pytester)
    pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider", "-k", "not threshold")
    (bundle,) = find_bundles(pytester.path / "out")

    def claim_qualifying(record: dict[str, Any]) -> None:
        record.update(outcome="passed", qualifying=True, not_qualifying_reasons=[])

    markdown = reseal_bundle(bundle.path, {"AC-1": claim_qualifying})
    (bundle,) = find_bundles(pytester.path / "out")
    assert verify_bundle(bundle) == [], "the forgery is self-consistent"
    code, lines = _gate(pytester, capsys, commit)
    assert code == 1
    assert lines[1] == (
        "AC-1: records.jsonl#AC-1 claims 'PASSED · QUALIFYING' but specgate.policy/1 recomputes "
        "'INCOMPLETE · NOT QUALIFYING' from its facts"
    )
    assert lines[2] == "AC-1: outcome is incomplete, not passed"
    assert lines[3].startswith("AC-1: not qualifying under specgate.policy/1: ")
    assert "incomplete: 1 test(s) of AC-1 deselected: test_specs.py::test_threshold" in lines[3]
    assert "**Verdict: INCOMPLETE · NOT QUALIFYING**" in markdown
    forged = markdown.replace("INCOMPLETE · NOT QUALIFYING", "PASSED · QUALIFYING")
    body = pytester.path / "forged.md"
    body.write_text(forged)
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    capsys.readouterr()
    code = run_gate(
        parser.parse_args([f"--pr-body={body}", f"--evidence={bundle.path}", f"--commit={commit}"])
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    line = forged.splitlines().index("**Verdict: PASSED · QUALIFYING**") + 1
    assert lines[1] == (
        f"AC-1: the block does not show what was judged: PR body line {line}: expected "
        "'**Verdict: INCOMPLETE · NOT QUALIFYING**', found '**Verdict: PASSED · QUALIFYING**'"
    )
