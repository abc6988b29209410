"""Issue #21's gate-side routes: each way a PR could decide what counts, and the check that refuses it.

Every test drives the real ``specgate gate`` (the console script in a subprocess where the route
runs through git, in process elsewhere) over bundles the real writer produced, and asserts the
line that names the AC and the cause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import (
    AC10,
    AC11,
    M4_HOST_FACTS,
    M4_MATCHED,
    REAL_ENGINE,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    gate,
    git,
    reseal_bundle,
)
from test_evidence_signing import HOSTS_TOML, Key, pem_key, sign

from pytest_specgate.contracts.acceptance import is_ac_id
from pytest_specgate.evidence import WrittenBundle
from pytest_specgate.evidence._trusted import TrustedConfigError, trusted_config_from_text

SPEC_NODE = "acceptance/test_ac10.py::test_speedup"
SPECGATE = Path(sys.executable).with_name("specgate")


def m4_run(repo: Path, *, engine: bool = True, hardware: dict[str, Any] | None = None) -> WrittenBundle:
    """AC-10 run honestly on the desk M4 (probe provenance, matched m4-16gb), AC-11 on the same host."""
    run = SyntheticRun(repo, TEST_ENV, host_facts=M4_HOST_FACTS)
    recorder = run.recorder(SPEC_NODE)
    if engine:
        recorder.note_engine(REAL_ENGINE)
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test(SPEC_NODE, AC10, recorder=recorder, hardware=dict(hardware or M4_MATCHED), mode="required")
    other = run.recorder("acceptance/test_ac11.py::test_small_air")
    other.note_engine(REAL_ENGINE)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11, recorder=other)
    return run.finish()


ACS_TOML = """\
[tool.specgate.acs."AC-10"]
profile = "m4-16gb"

[tool.specgate.acs."AC-11"]
"""
"""m4_run's ACs as the base branch defines them: AC-10 pinned to the desk M4, AC-11 no profile."""


def policy_toml(signers: dict[str, tuple[Key, list[str]]], extra: str = "") -> str:
    lines = ['[tool.specgate]\ngates = ["PR-A", "PR-B", "PR-C"]\n', HOSTS_TOML, ACS_TOML, extra]
    for name, (key, profiles) in signers.items():
        lines.append(
            f"[tool.specgate.trust.signers.{name}]\nkey = {json.dumps(key.public_line)}\n"
            f"profiles = {json.dumps(profiles)}\n"
        )
    return "\n".join(lines)


def write_trusted(tmp_path: Path, text: str, name: str = "trusted.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def body_of(tmp_path: Path, markdown: str) -> Path:
    path = tmp_path / "PR.md"
    path.write_text("## Summary\n\nSpeculative decoding.\n\n" + markdown)
    return path


def gate_args(body: Path, bundle: WrittenBundle, commit: str, *extra: str) -> list[str]:
    return [f"--pr-body={body}", f"--evidence={bundle.path}", f"--commit={commit}", "--require=AC-10", *extra]


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Key]:
    folder = tmp_path / "keys"
    folder.mkdir()
    return {name: pem_key(folder, name) for name in ("desk-m4", "gb10-box")}


# --- route 1: the block is the record ------------------------------------------------------------


def _edited_lines(markdown: str) -> list[tuple[int, str]]:
    """Every visible line of the AC-10 block after its heading, each with a visible edit."""
    lines = markdown.split("## AC-11 evidence")[0].split("\n")
    heading = lines.index("## AC-10 evidence")  # the summary table above it is outside every block
    return [
        (index, line[:-1] + "Z" + line[-1])
        for index, line in enumerate(lines)
        if index > heading and line.strip()
    ]


def test_every_visible_line_of_a_block_is_compared_with_its_rerendering(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Host, measurement rows, engine lines (once the renderer writes them): any edited line rejects."""
    bundle = m4_run(git_repo.path)
    args = gate_args(body_of(tmp_path, bundle.markdown), bundle, git_repo.commit, "--require=AC-11")
    assert gate(capsys, *args)[:2] == (0, ["specgate gate: accepted AC-10, AC-11"])
    edits = _edited_lines(bundle.markdown)
    assert len(edits) >= 7, edits
    for index, edited in edits:
        lines = bundle.markdown.split("\n")
        original, lines[index] = lines[index], edited
        assert edited != original
        code, out, _ = gate(capsys, *gate_args(body_of(tmp_path, "\n".join(lines)), bundle, git_repo.commit))
        assert code == 1, (original, edited)
        assert f"expected {' '.join(original.split())!r}, found {' '.join(edited.split())!r}" in out[0], out


def test_the_m4_host_line_and_a_faster_row_over_a_linux_record_are_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #21's own example: the block reads Apple M4 and 2.41× over a record that says otherwise."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    recorder = run.recorder(SPEC_NODE)
    recorder.note_engine(REAL_ENGINE)
    recorder.measure("median_speedup", 1.1, "x", at_least=1.0)
    run.run_test(SPEC_NODE, AC10, recorder=recorder)
    bundle = run.finish()
    host_line = next(line for line in bundle.markdown.split("\n") if line.startswith("- Host: "))
    row = next(line for line in bundle.markdown.split("\n") if "| median_speedup | 1.1 " in line)
    for original, forged in ((host_line, "- Host: Apple M4, 16.0 GB"), (row, row.replace("1.1", "2.41"))):
        body = body_of(tmp_path, bundle.markdown.replace(original, forged))
        code, out, _ = gate(capsys, *gate_args(body, bundle, git_repo.commit))
        assert code == 1
        assert out[0].startswith("AC-10: the block does not show what was judged: PR body line ")
        assert out[0].endswith(f": expected {original!r}, found {forged!r}")


def test_quoted_crlf_blocks_compare_equal_and_a_trailing_line_does_not(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = m4_run(git_repo.path)
    quoted = "\r\n".join(f"> {line}" if line else ">" for line in bundle.markdown.split("\n"))
    args = gate_args(body_of(tmp_path, quoted), bundle, git_repo.commit, "--require=AC-11")
    assert gate(capsys, *args)[:2] == (0, ["specgate gate: accepted AC-10, AC-11"])
    extra = bundle.markdown.replace(
        "## AC-11 evidence", "Reviewed on the desk M4: 2.41x!\n\n## AC-11 evidence"
    )
    code, out, _ = gate(capsys, *gate_args(body_of(tmp_path, extra), bundle, git_repo.commit))
    assert code == 1 and out[0].endswith(
        "expected the end of the block, found 'Reviewed on the desk M4: 2.41x!'"
    )


@pytest.mark.parametrize(
    "heading",
    ["## AC-10 evidence — desk M4, mlx, 2.41x", "### AC-10 evidence", "# AC-10 evidence: qualifying"],
)
def test_a_block_heading_is_exactly_the_ac_and_evidence(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], heading: str
) -> None:
    """Issue #28: the heading's words were never compared, yet a reviewer reads them first."""
    bundle = m4_run(git_repo.path)
    body = body_of(tmp_path, bundle.markdown.replace("## AC-10 evidence", heading, 1))
    line = body.read_text().split("\n").index(heading) + 1
    code, out, err = gate(capsys, *gate_args(body, bundle, git_repo.commit))
    assert (code, out[0]) == (1, (
        f"AC-10: the block heading at PR body line {line} is {heading!r}; a block heading is exactly "
        "'## AC-10 evidence': words there are never checked, so none are allowed"
    ))
    assert "this result is the authoritative account of the evidence" in err


# --- route 2: policy, gates and profiles from the PR's own pyproject -----------------------------


def _specgate(repo: Path, *arguments: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "GITHUB_STEP_SUMMARY")}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [str(SPECGATE), "gate", *arguments], cwd=repo, capture_output=True, text=True, env=env, check=False
    )


def test_a_pr_that_deletes_the_trust_policy_is_still_judged_by_the_base_branch_policy(
    git_repo: GitRepo, tmp_path: Path, keys: dict[str, Key]
) -> None:
    repo = git_repo.path
    base_text = policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])})
    (repo / "pyproject.toml").write_text(base_text)
    git(repo, "add", "pyproject.toml")
    git(repo, "commit", "-q", "-m", "base: trust policy")
    git(repo, "branch", "base")
    (repo / "pyproject.toml").write_text(HOSTS_TOML + ACS_TOML)  # the PR drops [tool.specgate.trust]
    git(repo, "commit", "-q", "-am", "PR: no more signatures")
    head = git(repo, "rev-parse", "HEAD")
    bundle = m4_run(repo)
    args = gate_args(body_of(tmp_path, bundle.markdown), bundle, head)
    from_base = _specgate(repo, *args, "--trusted-config=refs/heads/base")
    assert from_base.returncode == 1, from_base.stderr
    assert from_base.stdout.splitlines()[1].startswith(
        "AC-10: hardware profile m4-16gb: unsigned (no statement.intoto.dsse.json); m4-16gb may be vouched "
        "for by desk-m4 (SHA256:"
    )
    base_commit = git(repo, "rev-parse", "base")
    assert (f"trusted config refs/heads/base:pyproject.toml ({base_commit[:12]}); signatures checked"
            in from_base.stderr)
    from_pr = _specgate(repo, *args, "--trusted-config=pyproject.toml", ci=True)
    assert (from_pr.returncode, from_pr.stdout.splitlines()[1]) == (
        1,
        (
            "trust policy: none in pyproject.toml, and signatures are required (under CI, or "
            "--require-signatures): enrol signers in the base branch's [tool.specgate.trust], or pass "
            "--allow-unsigned to accept unsigned evidence"
        ),
    )
    allowed = _specgate(repo, *args, "--trusted-config=pyproject.toml", "--allow-unsigned", ci=True)
    assert allowed.returncode == 0, allowed.stdout
    assert "signatures NOT checked (--allow-unsigned): no trust policy in pyproject.toml" in allowed.stderr
    sign(bundle.path, keys["desk-m4"])
    signed = _specgate(repo, *args, "--trusted-config=refs/heads/base")
    assert signed.returncode == 1
    assert signed.stdout.splitlines()[1:] == [
        f"AC-10: harness file pyproject.toml differs from the trusted commit {base_commit[:12]} and this run "
        "imported or collected it: land the harness change first (or name it in the trusted [tool.specgate] "
        "sut_paths if it is in-process code under test)",
        f"AC-10: harness files changed since {base_commit}: pyproject.toml",
    ], "signed by the desk key, only the PR's own change to the project's configuration still blocks"


def test_a_pr_cannot_waive_to_a_gate_it_declares_for_itself(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    waived = AC10 | {"waived_to": "PR-Z", "reason": "later"}
    run.run_test(SPEC_NODE, waived, outcome="skipped", message="needs Apple M4")
    bundle = run.finish()
    trusted = write_trusted(tmp_path, '[tool.specgate]\ngates = ["PR-A", "PR-B"]\n')
    (git_repo.path / "pyproject.toml").write_text('[tool.specgate]\ngates = ["PR-A", "PR-B", "PR-Z"]\n')
    body = body_of(tmp_path, bundle.markdown)
    code, out, _ = gate(
        capsys, *gate_args(body, bundle, git_repo.commit, "--gate=PR-B", f"--trusted-config={trusted}")
    )
    assert code == 1 and out[0] == (
        f"AC-10: waiver does not count: PR-Z is not a declared gate; {trusted} declares "
        "[tool.specgate] gates = PR-A, PR-B"
    )
    code, _, err = gate(
        capsys, *gate_args(body, bundle, git_repo.commit, "--gate=PR-Z", f"--trusted-config={trusted}")
    )
    assert (code, err.splitlines()[-1]) == (
        2,
        f"specgate gate: error: --gate: PR-Z is not a declared gate; {trusted} declares "
        "[tool.specgate] gates = PR-A, PR-B",
    )
    code, _, err = gate(capsys, *gate_args(body, bundle, git_repo.commit, "--gate=PR-B"))
    assert code == 2 and "PR-B is not a declared gate: the defaults (no --trusted-config) declares no" in err


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("--upload-pack=touch", "not a git ref (e.g. refs/remotes/origin/main) nor a .toml file"),
        ("main:evil.toml", "the trusted config not found"),
        ("main:pyproject", "not a git ref"),
        ("refs/heads/no-such-branch", "no such commit here (fetch the base branch first)"),
        ("no-such-branch", "a short ref name, which git resolves by its own precedence; it names no ref"),
        ("0" * 40, "no such commit here"),
    ],
)
def test_a_trusted_config_ref_is_validated_before_git_sees_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], argument: str, message: str
) -> None:
    bundle = m4_run(git_repo.path)
    args = gate_args(
        body_of(tmp_path, bundle.markdown), bundle, git_repo.commit, f"--trusted-config={argument}"
    )
    code, _, err = gate(capsys, *args)
    assert code == 2 and message in err, err


def test_a_short_ref_name_is_refused_naming_the_refs_it_could_mean(
    git_repo: GitRepo, tmp_path: Path, keys: dict[str, Key]
) -> None:
    """Issue #28: a tag named ``origin/main`` beside the remote branch wins git's short-name lookup;
    the gate takes only a fully qualified ref or a commit, and names the candidates."""
    repo = git_repo.path
    (repo / "pyproject.toml").write_text(policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])}))
    git(repo, "add", "pyproject.toml")
    git(repo, "commit", "-q", "-m", "base: trust policy")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", "refs/remotes/origin/main", base)
    (repo / "pyproject.toml").write_text(HOSTS_TOML)  # the attacker's tag: no trust policy
    git(repo, "commit", "-q", "-am", "no policy")
    git(repo, "tag", "origin/main")
    head = git(repo, "rev-parse", "HEAD")
    bundle = m4_run(repo)
    args = gate_args(body_of(tmp_path, bundle.markdown), bundle, head)
    short = _specgate(repo, *args, "--trusted-config=origin/main")
    assert short.returncode == 2
    assert short.stderr.strip().endswith(
        "--trusted-config=origin/main: a short ref name, which git resolves by its own precedence; it is "
        "ambiguous here, naming refs/tags/origin/main, refs/remotes/origin/main; pass a fully qualified "
        "ref (refs/...) or the 40-hex commit (in Actions: the event's base sha)"
    ), short.stderr
    git(repo, "tag", "-d", "origin/main")
    single = _specgate(repo, *args, "--trusted-config=origin/main")
    assert single.returncode == 2
    assert single.stderr.strip().endswith(": --trusted-config=refs/remotes/origin/main")
    git(repo, "tag", "origin/main", head)
    for full in ("refs/remotes/origin/main", base):
        judged = _specgate(repo, *args, f"--trusted-config={full}")
        assert judged.returncode == 1, judged.stderr
        assert f"trusted config {full}:pyproject.toml ({base[:12]}); signatures checked" in judged.stderr
    tagged = _specgate(repo, *args, "--trusted-config=refs/tags/origin/main")
    assert f"({head[:12]}); signatures not checked" in tagged.stderr, "a full ref names exactly that ref"


def test_a_trusted_config_file_that_is_a_fifo_is_refused_not_waited_on(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "trusted.toml"
    os.mkfifo(fifo)
    bundle = m4_run(git_repo.path)
    args = gate_args(body_of(tmp_path, bundle.markdown), bundle, git_repo.commit, f"--trusted-config={fifo}")
    code, _, err = gate(capsys, *args)
    assert code == 2 and "the trusted config is a FIFO; expected a regular file" in err, err


# --- route 3: a key vouching for a profile the record names for itself ---------------------------


@pytest.mark.parametrize(
    ("hardware", "expected"),
    [
        (
            {
                **M4_MATCHED,
                "profile": "gb10",
                "requirement": {"profile": "gb10", "cuda_sm": "12.1", "min_gpus": 1},
            },
            "names host profile gb10, but the recorded host (macOS 15.3 arm64, Apple M4, 16.0 GB) "
            "does not match its trusted definition",
        ),
        (
            {**M4_MATCHED, "profile": None, "requirement": {"apple": "M4"}},
            "hardware profile m4-16gb: signed by gb10-box",
        ),
        (None, "hardware profile m4-16gb: signed by gb10-box"),
    ],
    ids=["relabelled-gb10", "label-dropped", "no-hardware-recorded"],
)
def test_the_gb10_key_cannot_vouch_for_an_m4_host_however_the_record_labels_it(
    git_repo: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    keys: dict[str, Key],
    hardware: dict[str, Any] | None,
    expected: str,
) -> None:
    trusted = write_trusted(
        tmp_path,
        policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"]), "gb10-box": (keys["gb10-box"], ["gb10"])}),
    )
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=M4_HOST_FACTS)
    recorder = run.recorder(SPEC_NODE)
    recorder.note_engine(REAL_ENGINE)
    run.run_test(SPEC_NODE, AC10, recorder=recorder, hardware=hardware)
    bundle = run.finish()
    sign(bundle.path, keys["gb10-box"])
    code, out, _ = gate(
        capsys,
        *gate_args(
            body_of(tmp_path, bundle.markdown), bundle, git_repo.commit, f"--trusted-config={trusted}"
        ),
    )
    assert code == 1
    assert any(expected in line for line in out), out


def test_a_recorded_requirement_that_changes_its_trusted_profile_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    trusted = write_trusted(tmp_path, policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])}))
    weaker = {**M4_MATCHED, "requirement": {"profile": "m4-16gb", "apple": "M4", "min_memory_gb": 8}}
    bundle = m4_run(git_repo.path, hardware=weaker)
    sign(bundle.path, keys["desk-m4"])
    code, out, _ = gate(
        capsys,
        *gate_args(
            body_of(tmp_path, bundle.markdown), bundle, git_repo.commit, f"--trusted-config={trusted}"
        ),
    )
    assert (code, out[0]) == (
        1,
        (
            f"AC-10: {SPEC_NODE}: recorded requirement of profile m4-16gb has min_memory_gb = 8, its trusted "
            "definition min_memory_gb = 16.0"
        ),
    )


# --- route 5: an AC with no engine ----------------------------------------------------------------


def test_a_hardware_ac_without_an_engine_qualifies_only_when_the_trusted_config_says_so(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = m4_run(git_repo.path, engine=False)
    body = body_of(tmp_path, bundle.markdown)
    plain = write_trusted(tmp_path, HOSTS_TOML + '[tool.specgate.acs."AC-10"]\n', "plain.toml")
    code, out, _ = gate(capsys, *gate_args(body, bundle, git_repo.commit, f"--trusted-config={plain}"))
    assert (code, out) == (
        1,
        [
            f"AC-10: not qualifying under the trusted config ({plain}): hardware AC records no engine: "
            f"no test of AC-10 ({SPEC_NODE} on hardware) recorded one; only an AC the trusted config "
            'declares engine-free ([tool.specgate.acs."AC-10"] engine = false) qualifies without'
        ],
    )
    free = write_trusted(
        tmp_path, HOSTS_TOML + '\n[tool.specgate.acs."AC-10"]\nengine = false\n', "free.toml"
    )
    assert gate(capsys, *gate_args(body, bundle, git_repo.commit, f"--trusted-config={free}"))[0] == 0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tool.specgate.acs."AC-10"]\nengines = false\n',
         "unknown key 'engines'; known: backends, engine, profile"),
        ('[tool.specgate.acs."AC-10"]\nengine = "no"\n', "engine must be true or false, found 'no'"),
        ('[tool.specgate.acs."AC-１０"]\nengine = false\n', "not an AC id"),
        ("[tool.specgate]\nacs = 3\n", "[tool.specgate.acs] must be a table of AC tables"),
    ],
)
def test_the_acs_table_is_validated(table: str, message: str) -> None:
    with pytest.raises(TrustedConfigError, match=r".*" + message.replace("[", r"\[").replace(".", r"\.")):
        trusted_config_from_text(table, "trusted.toml", None)


# --- the harness-diff list --------------------------------------------------------------------------


def test_the_gate_lists_the_harness_files_the_pr_changed_for_each_ac(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    repo = git_repo.path
    (repo / "pyproject.toml").write_text(HOSTS_TOML + ACS_TOML)
    for path in (
        "acceptance/test_ac10.py",
        "acceptance/_figures.py",
        "acceptance/conftest.py",
        "tests/conftest.py",
        "docs/notes.md",
    ):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("# base\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    for path in ("acceptance/_figures.py", "acceptance/conftest.py", "tests/conftest.py", "docs/notes.md"):
        (repo / path).write_text("FAKE = 2.41\n")
    git(repo, "commit", "-q", "-am", "PR")
    head = git(repo, "rev-parse", "HEAD")
    bundle = m4_run(repo)
    args = gate_args(
        body_of(tmp_path, bundle.markdown), bundle, head, "--require=AC-11", f"--trusted-config={base}"
    )
    text = _specgate(repo, *args)
    assert text.returncode == 1, text.stdout
    blocked = [line for line in text.stdout.splitlines() if " harness file " in line]
    assert blocked == [
        f"AC-10, AC-11: harness file {path} differs from the trusted commit {base[:12]} and this run "
        "imported or collected it: land the harness change first (or name it in the trusted [tool.specgate] "
        "sut_paths if it is in-process code under test)"
        for path in ("acceptance/_figures.py", "acceptance/conftest.py")
    ], "files beside the specs and conftests above them are harness even when the record lists no import"
    assert text.stdout.splitlines()[-1:] == [
        f"AC-10, AC-11: harness files changed since {base}: acceptance/_figures.py, acceptance/conftest.py",
    ]
    result = json.loads(_specgate(repo, *args, "--json").stdout)
    assert result["base_commit"] == base
    assert [ac["harness_changed"] for ac in result["acs"]] == [
        ["acceptance/_figures.py", "acceptance/conftest.py"]
    ] * 2


# --- keys that expire ----------------------------------------------------------------------------


def test_an_expired_key_vouches_for_nothing_and_the_rejection_says_so(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    bundle = m4_run(git_repo.path)
    sign(bundle.path, keys["desk-m4"])
    body = body_of(tmp_path, bundle.markdown)
    for expires, accepted in (
        ('"2999-01-01"', True),
        ("2020-01-01", False),
        ('"2020-01-01T12:00:00+02:00"', False),
    ):
        text = policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])}).replace(
            'profiles = ["m4-16gb"]\n', f'profiles = ["m4-16gb"]\nexpires = {expires}\n'
        )
        trusted = write_trusted(tmp_path, text)
        code, out, _ = gate(capsys, *gate_args(body, bundle, git_repo.commit, f"--trusted-config={trusted}"))
        if accepted:
            assert code == 0, out
            continue
        assert code == 1
        assert ", whose key expired 2020-01-01T" in out[0] and "and vouches for nothing" in out[0], out
        assert out[0].endswith("m4-16gb may be vouched for by no enrolled signer whose key has not expired")
    bad = policy_toml({"desk-m4": (keys["desk-m4"], [])}).replace(
        "profiles = []\n", 'profiles = []\nexpires = "soon"\n'
    )
    with pytest.raises(TrustedConfigError, match=r"expires 'soon' is not an ISO date or datetime"):
        trusted_config_from_text(bad, "trusted.toml", None)


# --- AC ids ------------------------------------------------------------------------------------------


def test_ac_ids_take_ascii_digits_only() -> None:
    assert is_ac_id("AC-10") and is_ac_id("AC-9a") and is_ac_id("FR-4.6")
    assert not is_ac_id("AC-１０") and not is_ac_id("FR-４.６") and not is_ac_id("AC-10\n")


def test_a_resealed_forgery_pasted_with_its_new_block_is_still_judged_by_the_recomputation(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The re-render compares what the block shows, not whether the record is honest: a forger who
    re-renders gets the recomputed NOT QUALIFYING verdict in the very block they paste."""
    bundle = m4_run(git_repo.path)

    def mock(record: dict[str, Any]) -> None:
        record["tests"][0]["engines"] = [{"backend": "mock", "model": "m", "simulated": True}]

    markdown = reseal_bundle(bundle.path, {"AC-10": mock})
    code, out, _ = gate(capsys, *gate_args(body_of(tmp_path, markdown), bundle, git_repo.commit))
    assert code == 1 and any(
        line.startswith("AC-10: not qualifying under specgate.policy/1: ") for line in out
    )
    assert not any("the block does not show" in line for line in out), out
