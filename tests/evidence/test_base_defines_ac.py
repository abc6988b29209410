"""Issue #28: what an AC requires comes from the trusted config, never from the PR's markers.

Each attack is a record the real writer produced and the real gate judges under a trusted config
that pins AC-10 to the desk M4 (``[tool.specgate.acs."AC-10"] profile = "m4-16gb"``); each asserts
the line naming the AC and the cause. The honest desk-M4 run, signed by the desk key, passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import (
    AC10,
    HOST_FACTS,
    M4_HOST_FACTS,
    M4_MATCHED,
    REAL_ENGINE,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    gate,
)
from test_evidence_signing import HOSTS_TOML, Key, pem_key, sign
from test_trusted_gate import SPEC_NODE, body_of, gate_args, m4_run, policy_toml, write_trusted

from pytest_specgate.evidence import WrittenBundle
from pytest_specgate.evidence._trusted import TrustedConfigError, trusted_config_from_text

LINUX_SUMMARY = "Linux x86_64, no Apple chip, 24.0 GB, no GPU"


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Key]:
    folder = tmp_path / "keys"
    folder.mkdir()
    return {name: pem_key(folder, name) for name in ("desk-m4", "ci")}


def _policy(tmp_path: Path, keys: dict[str, Key], extra: str = "") -> Path:
    """The base branch's policy: the desk key for m4-16gb, a CI key for hosts of no profile."""
    return write_trusted(tmp_path, policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"]),
                                                "ci": (keys["ci"], [])}, extra))


def _linux_run(repo: Path, hardware: dict[str, Any] | None = None,
               engine: dict[str, Any] | None = None) -> WrittenBundle:
    """AC-10 run honestly on Linux, after the PR edited its marker (``hardware``: what was recorded)."""
    run = SyntheticRun(repo, TEST_ENV, host_facts={**HOST_FACTS, "source": "probe"})
    recorder = run.recorder(SPEC_NODE)
    recorder.note_engine(engine or REAL_ENGINE)
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test(SPEC_NODE, AC10, recorder=recorder, hardware=hardware)
    return run.finish()


def _judged(capsys: pytest.CaptureFixture[str], tmp_path: Path, bundle: WrittenBundle, commit: str,
            trusted: Path) -> tuple[int, list[str]]:
    body = body_of(tmp_path, bundle.markdown)
    code, out, _ = gate(capsys, *gate_args(body, bundle, commit, f"--trusted-config={trusted}"))
    return code, out


def test_the_honest_desk_m4_run_signed_by_the_desk_key_passes(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    bundle = m4_run(git_repo.path)
    sign(bundle.path, keys["desk-m4"])
    assert _judged(capsys, tmp_path, bundle, git_repo.commit, _policy(tmp_path, keys)) == (
        0, ["specgate gate: accepted AC-10"])


def test_a_pr_that_deletes_the_hardware_marker_cannot_have_the_ci_key_vouch(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    """The issue's first route: no marker, an honest Linux run, signed by a key with profiles = []."""
    bundle = _linux_run(git_repo.path)
    sign(bundle.path, keys["ci"])
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, _policy(tmp_path, keys))
    assert code == 1
    assert f"AC-10: the recorded host ({LINUX_SUMMARY}) does not match m4-16gb, the profile the trusted " \
           "config pins for AC-10" in "\n".join(out), out
    assert any(line.startswith("AC-10: hardware profile m4-16gb: signed by ci (SHA256:")
               and "not enrolled for m4-16gb; m4-16gb may be vouched for by desk-m4" in line
               for line in out), out
    assert any(line.endswith(f'{SPEC_NODE} carries no @pytest.mark.hardware("m4-16gb"), which the trusted '
                             "config pins for AC-10") for line in out), out


def test_a_test_marked_for_another_profile_is_not_the_pinned_ac(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    inline = {**M4_MATCHED, "profile": None, "requirement": {"apple": "M4"}}
    bundle = m4_run(git_repo.path, hardware=inline)
    sign(bundle.path, keys["desk-m4"])
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, _policy(tmp_path, keys))
    assert (code, out) == (1, [
        f"AC-10: not qualifying under the trusted config ({tmp_path / 'trusted.toml'}): {SPEC_NODE} is "
        "marked for its own clauses {'apple': 'M4'}, not @pytest.mark.hardware(\"m4-16gb\"), which the "
        "trusted config pins for AC-10"
    ])


def test_an_ac_the_trusted_config_does_not_define_is_rejected_with_the_table_to_add(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    bundle = m4_run(git_repo.path)
    sign(bundle.path, keys["desk-m4"])
    undefined = write_trusted(tmp_path, HOSTS_TOML, "hosts.toml")
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, undefined)
    assert (code, out) == (1, [
        f"AC-10: not qualifying under the trusted config ({undefined}): AC-10 is not defined there, so "
        'what it requires is unknown: land [tool.specgate.acs."AC-10"] profile = "m4-16gb" in the base '
        "branch first (an empty table for an AC that needs no host profile)"
    ])


def test_a_pinned_ac_needs_an_engine_in_every_test_unless_the_base_says_engine_false(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    bundle = m4_run(git_repo.path, engine=False)
    sign(bundle.path, keys["desk-m4"])
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, _policy(tmp_path, keys))
    assert code == 1 and out[0].endswith(
        f"{SPEC_NODE} recorded no engine; the trusted config pins AC-10 to profile m4-16gb, whose tests must "
        'each name the engine their figures came from (only [tool.specgate.acs."AC-10"] engine = false '
        "exempts it)"), out
    free = write_trusted(tmp_path, policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])}).replace(
        'profile = "m4-16gb"\n', 'profile = "m4-16gb"\nengine = false\n', 1), "free.toml")
    assert _judged(capsys, tmp_path, bundle, git_repo.commit, free)[0] == 0


def test_an_engine_of_a_backend_the_base_does_not_allow_is_rejected(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    bundle = m4_run(git_repo.path)
    sign(bundle.path, keys["desk-m4"])
    text = policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])})
    only_mlx = write_trusted(tmp_path, text.replace('profile = "m4-16gb"\n',
                                                    'profile = "m4-16gb"\nbackends = ["mlx"]\n', 1))
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, only_mlx)
    assert code == 1 and out[0].endswith(
        f"{SPEC_NODE}: engine backend 'vllm' is not one the trusted config allows for AC-10 (mlx)"), out
    both = write_trusted(tmp_path, text.replace('profile = "m4-16gb"\n',
                                                'profile = "m4-16gb"\nbackends = ["mlx", "vllm"]\n', 1))
    assert _judged(capsys, tmp_path, bundle, git_repo.commit, both)[0] == 0


def test_a_backend_the_base_does_not_allow_is_named_once_per_test(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    """A paired run boots a baseline and a candidate of one backend: one line says so, not two."""
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=M4_HOST_FACTS)
    recorder = run.recorder(SPEC_NODE)
    recorder.note_engine(REAL_ENGINE)
    recorder.note_engine({**REAL_ENGINE, "config": "vllm model=tiny-target draft=tiny-draft"})
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test(SPEC_NODE, AC10, recorder=recorder, hardware=dict(M4_MATCHED), mode="required")
    bundle = run.finish()
    sign(bundle.path, keys["desk-m4"])
    text = policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"])})
    only_mlx = write_trusted(tmp_path, text.replace('profile = "m4-16gb"\n',
                                                    'profile = "m4-16gb"\nbackends = ["mlx"]\n', 1))
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, only_mlx)
    named = [line for line in out if "engine backend 'vllm' is not one the trusted config allows" in line]
    assert code == 1 and len(named) == 1, out


def test_an_unpinned_ac_keeps_the_any_enrolled_signer_rule(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    """An AC the base defines with no profile (a contract on a mock-free engine) may be signed by CI."""
    bundle = _linux_run(git_repo.path)
    sign(bundle.path, keys["ci"])
    text = policy_toml({"desk-m4": (keys["desk-m4"], ["m4-16gb"]), "ci": (keys["ci"], [])})
    unpinned = write_trusted(tmp_path, text.replace('profile = "m4-16gb"\n', "", 1))
    accepted = (0, ["specgate gate: accepted AC-10"])
    assert _judged(capsys, tmp_path, bundle, git_repo.commit, unpinned) == accepted


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tool.specgate.acs."AC-10"]\nprofile = "m5"\n',
         "profile 'm5' is not declared in [tool.specgate.hosts] (declared: gb10, m4-16gb)"),
        ('[tool.specgate.acs."AC-10"]\nbackends = "mlx"\n', "backends must be a non-empty list"),
        ('[tool.specgate.acs."AC-10"]\nbackends = []\n', "backends must be a non-empty list"),
    ],
)
def test_an_ac_definition_is_validated(table: str, message: str) -> None:
    with pytest.raises(TrustedConfigError, match=r".*" + message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        trusted_config_from_text(HOSTS_TOML + table, "trusted.toml", None)


def test_m4_facts_alone_do_not_satisfy_a_pinned_ac_without_its_marker(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    """On the real M4, a test that dropped its marker still fails the pin (its marker is checked,
    not only the host)."""
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=M4_HOST_FACTS)
    recorder = run.recorder(SPEC_NODE)
    recorder.note_engine(REAL_ENGINE)
    run.run_test(SPEC_NODE, AC10, recorder=recorder)
    bundle = run.finish()
    sign(bundle.path, keys["desk-m4"])
    code, out = _judged(capsys, tmp_path, bundle, git_repo.commit, _policy(tmp_path, keys))
    assert code == 1 and len(out) == 1 and out[0].endswith(
        f'{SPEC_NODE} carries no @pytest.mark.hardware("m4-16gb"), which the trusted config pins for AC-10')


def test_a_waived_pinned_ac_skipped_on_ci_may_be_signed_by_the_ci_key(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: dict[str, Key]
) -> None:
    """An honest deferral: AC-10 waived to a later trusted gate, skipped on a CI host."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    skipped = {**M4_MATCHED, "matched": False, "reasons": ["needs Apple M4; host: linux"]}
    run.run_test(SPEC_NODE, AC10 | {"waived_to": "PR-C", "reason": "no M4 before PR-C"}, outcome="skipped",
                 hardware=skipped)
    bundle = run.finish()
    sign(bundle.path, keys["ci"])
    body = body_of(tmp_path, bundle.markdown)
    args = gate_args(body, bundle, git_repo.commit, f"--trusted-config={_policy(tmp_path, keys)}")
    assert gate(capsys, *args, "--gate=PR-B")[:2] == (0, ["specgate gate: accepted AC-10"])
    code, out, _ = gate(capsys, *args, "--gate=PR-C")
    assert code == 1
    assert "AC-10: waiver to PR-C expired: this is gate PR-C, the AC must now pass on its own" in out
