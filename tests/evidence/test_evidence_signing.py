"""Signed bundles and the trust policy: what the gate accepts and refuses under a policy."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from evidence_testkit import (
    AC10,
    AC11,
    M4_HOST_FACTS,
    REAL_ENGINE,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    cli,
    git,
    reseal_bundle,
)

from pytest_specgate.contracts.gates import declared_gates
from pytest_specgate.contracts.host import host_facts_from_dict
from pytest_specgate.evidence import WrittenBundle, build_redactor, evaluate_gate, load_bundle, verify_bundle
from pytest_specgate.evidence._bundle import SIGNATURE_NAME
from pytest_specgate.evidence._gate import CommitChoice
from pytest_specgate.evidence._jsonio import pretty_json
from pytest_specgate.evidence._signing import (
    PASSPHRASE_ENV,
    SigningError,
    envelope_from_bytes,
    load_signing_key,
    pae,
    sign_bundle,
)
from pytest_specgate.evidence._trusted import (
    TrustedConfig,
    TrustedConfigError,
    trusted_config_from_file,
    trusted_config_from_text,
)
from pytest_specgate.evidence.cli_commands import (
    configure_gate_parser,
    configure_sign_parser,
    run_gate,
    run_sign,
)
from pytest_specgate.selection import host_probe

M4_HARDWARE = {
    "requirement": {"apple": "M4", "min_memory_gb": 16, "profile": "m4-16gb"},
    "profile": "m4-16gb",
    "matched": True,
    "reasons": [],
    "host_summary": "Apple M4, 16 GB, macOS 15.1",
}
HOSTS_TOML = """\
[tool.specgate.hosts.m4-16gb]
apple = "M4"
min_memory_gb = 16

[tool.specgate.hosts.gb10]
cuda_sm = "12.1"
"""


@dataclass(frozen=True)
class Key:
    path: Path
    public_line: str


def pem_key(directory: Path, name: str) -> Key:
    private = Ed25519PrivateKey.generate()
    path = directory / f"{name}.pem"
    path.write_bytes(private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    public = private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    return Key(path, public)


def ssh_key(directory: Path, name: str, *, kind: str = "ed25519", passphrase: str = "") -> Key:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    path = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", f"{name}@example.invalid", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Key(path, path.with_suffix(".pub").read_text().strip())


def load_policy(path: Path) -> TrustedConfig:
    """The trusted config of a policy file, as ``--trusted-config=FILE.toml`` reads it."""
    return trusted_config_from_file(path, "--trusted-config")


UNPINNED_ACS = '[tool.specgate.acs."AC-10"]\n[tool.specgate.acs."AC-11"]\n'
"""AC-10 and AC-11 defined with no pinned profile: these tests show the profiles a signer is needed
for derived from host facts alone (test_base_defines_ac pins them)."""


def write_policy(directory: Path, signers: Mapping[str, tuple[Key, list[str]]]) -> Path:
    lines = [HOSTS_TOML, UNPINNED_ACS]
    for name, (key, profiles) in signers.items():
        lines.append(f"[tool.specgate.trust.signers.{name}]\nkey = {json.dumps(key.public_line)}\n"
                     f"profiles = {json.dumps(profiles)}\n")
    path = directory / "trust.toml"
    path.write_text("\n".join(lines))
    return path


@dataclass(frozen=True)
class Setup:
    repo: GitRepo
    bundle: WrittenBundle
    pr_body: Path
    desk_m4: Key
    gb10: Key
    stranger: Key
    policy: TrustedConfig


def hardware_bundle(repo: GitRepo) -> WrittenBundle:
    """AC-10 ran on a matched m4-16gb host (under a policy only its signature can fail); AC-11 no hardware."""
    run = SyntheticRun(repo.path, TEST_ENV, host_facts=M4_HOST_FACTS)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    recorder.attach("server.log", b"ready on 127.0.0.1:8000\n")
    recorder.note_engine(REAL_ENGINE)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder, hardware=M4_HARDWARE)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


@pytest.fixture
def setup(git_repo: GitRepo, tmp_path: Path) -> Setup:
    keys = tmp_path / "keys"
    keys.mkdir()
    desk_m4, gb10, stranger = (pem_key(keys, name) for name in ("desk-m4", "gb10-box", "stranger"))
    policy_path = write_policy(tmp_path, {"desk-m4": (desk_m4, ["m4-16gb"]), "gb10-box": (gb10, ["gb10"])})
    policy = load_policy(policy_path)
    assert policy.trust is not None
    bundle = hardware_bundle(git_repo)
    body = tmp_path / "PR.md"
    body.write_text(bundle.markdown)
    return Setup(git_repo, bundle, body, desk_m4, gb10, stranger, policy)


def sign(bundle: Path, key: Key) -> None:
    sign_bundle(bundle, load_signing_key(key.path, {}), build_redactor(None))


def gate_problems(setup: Setup, policy: TrustedConfig | None) -> list[str]:
    evidence, commit = [setup.repo.path / "out"], full(setup.repo.commit)
    trusted = policy or trusted_config_from_text(HOSTS_TOML + UNPINNED_ACS, "hosts only", None)
    verdict = evaluate_gate(setup.pr_body, evidence, ["AC-10", "AC-11"], commit, trusted=trusted)
    return list(verdict.problems)


def full(commit: str) -> CommitChoice:
    return CommitChoice(commit, "--commit")


def keyid(setup: Setup, key: Key) -> str:
    return load_signing_key(key.path, {}).keyid


def test_pae_is_the_dsse_encoding() -> None:
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_signed_by_the_enrolled_key_is_accepted_and_the_check_names_no_problem(setup: Setup) -> None:
    sign(setup.bundle.path, setup.desk_m4)
    assert gate_problems(setup, setup.policy) == []
    envelope = envelope_from_bytes((setup.bundle.path / SIGNATURE_NAME).read_bytes())
    statement = json.loads(envelope.payload)
    names = {subject["name"] for subject in statement["subject"]}
    assert {"source", "manifest.json", "evidence.md", "records.jsonl", "run.json", "statement.intoto.json",
            "records.jsonl#AC-10", "records.jsonl#AC-11"} <= names
    assert statement["subject"][0]["digest"] == {"gitCommit": setup.repo.commit}
    assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    assert envelope.payload_type == "application/vnd.in-toto+json"
    assert verify_bundle(load_bundle(setup.bundle.path)) == []


def test_unsigned_hardware_ac_is_rejected_naming_profile_and_allowed_signer(setup: Setup) -> None:
    assert gate_problems(setup, None) == []
    problems = gate_problems(setup, setup.policy)
    desk = f"desk-m4 ({keyid(setup, setup.desk_m4)})"
    assert problems[0] == (
        f"AC-10: hardware profile m4-16gb: unsigned (no {SIGNATURE_NAME}); "
        f"m4-16gb may be vouched for by {desk}"
    )
    assert problems[1] == (
        f"AC-11: hardware profile m4-16gb: unsigned (no {SIGNATURE_NAME}); "
        f"m4-16gb may be vouched for by {desk}"
    ), "AC-11 claims no hardware, but its host facts are an M4's: only the M4's signer may vouch for it"


def test_signed_by_an_unenrolled_key_is_rejected(setup: Setup) -> None:
    sign(setup.bundle.path, setup.stranger)
    stranger = keyid(setup, setup.stranger)
    problems = gate_problems(setup, setup.policy)
    assert problems[0] == (
        f"AC-10: hardware profile m4-16gb: signed only by unknown key {stranger} (not in the trust policy); "
        f"m4-16gb may be vouched for by desk-m4 ({keyid(setup, setup.desk_m4)})"
    )
    assert len(problems) == 2
    assert problems[1].startswith("AC-11: hardware profile m4-16gb: signed only by unknown key")


def test_a_signature_claiming_an_enrolled_keyid_must_verify_under_that_key(setup: Setup) -> None:
    sign(setup.bundle.path, setup.stranger)
    path = setup.bundle.path / SIGNATURE_NAME
    document = json.loads(path.read_text())
    document["signatures"][0]["keyid"] = keyid(setup, setup.desk_m4)
    path.write_text(pretty_json(document))
    desk = f"desk-m4 ({keyid(setup, setup.desk_m4)})"
    assert gate_problems(setup, setup.policy)[0] == (
        f"AC-10: hardware profile m4-16gb: signed only by a signature claiming {desk} that does not verify; "
        f"m4-16gb may be vouched for by {desk}"
    )


def test_signed_by_a_key_enrolled_for_another_profile_is_rejected(setup: Setup) -> None:
    sign(setup.bundle.path, setup.gb10)
    problems = gate_problems(setup, setup.policy)
    assert problems == [
        f"{ac}: hardware profile m4-16gb: signed by gb10-box ({keyid(setup, setup.gb10)}), not enrolled for "
        f"m4-16gb; m4-16gb may be vouched for by desk-m4 ({keyid(setup, setup.desk_m4)})"
        for ac in ("AC-10", "AC-11")
    ]


def forge(setup: Setup, edit: Any) -> None:
    """Edit AC-10's record, then recompute manifest, evidence.md and the PR body with the package."""
    setup.pr_body.write_text(reseal_bundle(setup.bundle.path, {"AC-10": edit}))


def test_forged_and_remanifested_bundle_passes_unkeyed_checks_but_not_the_policy(setup: Setup) -> None:
    sign(setup.bundle.path, setup.desk_m4)

    def faster(record: dict[str, Any]) -> None:
        record["measurements"][0]["value"] = 3.5

    forge(setup, faster)
    assert verify_bundle(load_bundle(setup.bundle.path)) == []
    assert gate_problems(setup, None) == [], "the forgery must be consistent, or this test proves nothing"
    problems = gate_problems(setup, setup.policy)
    assert len(problems) == 2
    assert problems[0].startswith(
        f"AC-10: hardware profile m4-16gb: the statement signed by desk-m4 ({keyid(setup, setup.desk_m4)}) "
        "does not match this bundle: evidence.md: sha256 "
    )
    assert "records.jsonl: sha256" in problems[0] and problems[0].count("(and 1 more)") == 1
    assert "manifest.json: sha256" in problems[0]


def test_one_ac_record_is_checked_against_the_signature_on_its_own(setup: Setup) -> None:
    """A reviewer holding the signed statement checks one AC's line alone: its sha256 is the
    signed subject ``records.jsonl#AC-10``, the manifest's entry and the PR body's ac-sha256; an
    edit to another AC's line names that line and leaves AC-10's subject matching."""
    from evidence_testkit import record_line

    from pytest_specgate.evidence._jsonio import sha256_hex
    from pytest_specgate.evidence._signing import file_digests, statement_from_payload, subject_mismatches

    sign(setup.bundle.path, setup.desk_m4)
    envelope = envelope_from_bytes((setup.bundle.path / SIGNATURE_NAME).read_bytes())
    statement = statement_from_payload(envelope.payload)
    line = record_line(setup.bundle.path, "AC-10")
    manifest = json.loads((setup.bundle.path / "manifest.json").read_text())
    signed = statement.files["records.jsonl#AC-10"]
    assert signed == sha256_hex(line) == manifest["records"]["AC-10"]["sha256"]
    assert f"ac-sha256={sha256_hex(line)}" in setup.bundle.markdown
    records = setup.bundle.path / "records.jsonl"
    records.write_bytes(records.read_bytes().replace(b'"title":"8 GB M1', b'"title":"9 GB M1', 1))
    mismatches = subject_mismatches(statement, file_digests(setup.bundle.path))
    assert [problem.split(":")[0] for problem in mismatches] == ["records.jsonl", "records.jsonl#AC-11"]


def test_removing_the_hardware_and_the_signature_does_not_get_around_the_policy(setup: Setup) -> None:
    sign(setup.bundle.path, setup.desk_m4)

    def no_hardware(record: dict[str, Any]) -> None:
        for test in record["tests"]:
            test["hardware"] = None

    forge(setup, no_hardware)
    (setup.bundle.path / SIGNATURE_NAME).unlink()
    assert gate_problems(setup, None) == []
    problems = gate_problems(setup, setup.policy)
    assert problems[0].startswith(f"AC-10: hardware profile m4-16gb: unsigned (no {SIGNATURE_NAME})")


def test_envelope_edits_that_keep_its_meaning_are_still_rejected(setup: Setup) -> None:
    sign(setup.bundle.path, setup.desk_m4)
    path = setup.bundle.path / SIGNATURE_NAME
    original = path.read_bytes()
    document = json.loads(original)
    sig = document["signatures"][0]["sig"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    # 64 bytes end in one byte spread over two base64 digits: the second has four unused bits,
    # so flipping one spells the same signature differently.
    twin = sig[:-3] + alphabet[alphabet.index(sig[-3]) ^ 1] + sig[-2:]
    assert base64.b64decode(twin) == base64.b64decode(sig)
    variants = {
        "indent": original.replace(b'\n  "', b'\n\t"', 1),
        "base64 twin": original.replace(sig.encode(), twin.encode()),
        "payload type": original.replace(b"application/vnd.in-toto+json", b"application/json"),
    }
    for name, data in variants.items():
        assert data != original, name
        path.write_bytes(data)
        problems = gate_problems(setup, setup.policy)
        assert problems and "statement.intoto.dsse.json: " in problems[0], (name, problems)


def test_countersigning_adds_a_signature_and_either_signer_vouches(setup: Setup) -> None:
    sign(setup.bundle.path, setup.gb10)
    sign(setup.bundle.path, setup.desk_m4)
    envelope = envelope_from_bytes((setup.bundle.path / SIGNATURE_NAME).read_bytes())
    assert [s.keyid for s in envelope.signatures] == [keyid(setup, setup.gb10), keyid(setup, setup.desk_m4)]
    assert gate_problems(setup, setup.policy) == []


def test_ssh_keygen_ed25519_key_signs_and_is_enrolled_by_its_pub_line(setup: Setup, tmp_path: Path) -> None:
    key = ssh_key(tmp_path, "id_ed25519")
    printed = subprocess.run(["ssh-keygen", "-lf", str(key.path)], capture_output=True, text=True, check=True)
    assert load_signing_key(key.path, {}).keyid == printed.stdout.split()[1]
    enrolled = {"desk-m4": (key, ["m4-16gb"]), "gb10-box": (setup.gb10, ["gb10"])}
    policy = load_policy(write_policy(tmp_path, enrolled))
    sign(setup.bundle.path, key)
    assert gate_problems(setup, policy) == []
    sign(setup.bundle.path, setup.gb10)
    assert gate_problems(setup, policy) == []
    assert gate_problems(setup, setup.policy) == [
        f"{ac}: hardware profile m4-16gb: signed by unknown key {keyid(setup, key)} (not in the trust "
        f"policy); gb10-box ({keyid(setup, setup.gb10)}), not enrolled for m4-16gb; m4-16gb may be vouched "
        f"for by desk-m4 ({keyid(setup, setup.desk_m4)})"
        for ac in ("AC-10", "AC-11")
    ]


def test_passphrases_come_from_the_environment(tmp_path: Path) -> None:
    key = ssh_key(tmp_path, "id_locked", passphrase="correct horse")
    with pytest.raises(SigningError, match=f"passphrase-protected: set {PASSPHRASE_ENV}"):
        load_signing_key(key.path, {})
    with pytest.raises(SigningError, match="wrong passphrase"):
        load_signing_key(key.path, {PASSPHRASE_ENV: "wrong"})
    assert load_signing_key(key.path, {PASSPHRASE_ENV: "correct horse"}).keyid.startswith("SHA256:")
    public = key.path.with_suffix(".pub")
    with pytest.raises(SigningError, match="a public key; signing needs the private key it belongs to"):
        load_signing_key(public, {})
    pem = tmp_path / "locked.pem"
    pem.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"s3cret")))
    assert load_signing_key(pem, {PASSPHRASE_ENV: "s3cret"}).keyid.startswith("SHA256:")


def test_keys_other_than_ed25519_are_refused_with_one_line(tmp_path: Path) -> None:
    rsa = ssh_key(tmp_path, "id_rsa", kind="rsa")
    with pytest.raises(SigningError) as caught:
        load_signing_key(rsa.path, {})
    assert str(caught.value) == (
        f"{rsa.path}: key type RSA; specgate signs with Ed25519 keys only "
        "(make one with: ssh-keygen -t ed25519)"
    )
    ec = tmp_path / "ec.pem"
    ec.write_bytes(generate_private_key(SECP256R1()).private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    with pytest.raises(SigningError, match="key type EC; specgate signs with Ed25519 keys only"):
        load_signing_key(ec, {})
    with pytest.raises(TrustedConfigError, match=r"signers.ci\]: key: key type RSA; only Ed25519 keys"):
        load_policy(write_policy(tmp_path, {"ci": (rsa, [])}))


def test_policy_errors_name_the_file_and_signer(tmp_path: Path) -> None:
    key = pem_key(tmp_path, "k")
    with pytest.raises(TrustedConfigError, match=r"signers.desk\]: profile 'm4-16g' is not declared"):
        load_policy(write_policy(tmp_path, {"desk": (key, ["m4-16g"])}))
    with pytest.raises(TrustedConfigError, match="signers desk and twin share the key SHA256:"):
        load_policy(write_policy(tmp_path, {"desk": (key, []), "twin": (key, [])}))
    empty = tmp_path / "empty.toml"
    empty.write_text("[tool.specgate.trust.signers]\n")
    with pytest.raises(TrustedConfigError, match=r"enrolls no signer"):
        load_policy(empty)


def test_sign_and_gate_commands(setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # The signer's own probe is the desk M4's (the bundle's facts): test_key_custody shows a
    # signer refusing facts its probe does not find.
    monkeypatch.setattr(host_probe, "probe_host", lambda: host_facts_from_dict(M4_HOST_FACTS, where="M4"))
    policy = str(setup.policy.source)
    gate_args = ["--pr-body", str(setup.pr_body), "--evidence", str(setup.repo.path / "out"),
                 "--require", "AC-10", "--commit", setup.repo.commit, f"--trusted-config={policy}"]
    code, out, err = cli(capsys, configure_gate_parser, run_gate, *gate_args)
    assert code == 1 and out.splitlines()[1].startswith("AC-10: hardware profile m4-16gb: unsigned")
    checked = f"signatures checked under the trust policy of {policy} (2 signers)"
    assert f"trusted config {policy}; {checked}" in err
    code, out, err = cli(capsys, configure_sign_parser, run_sign, str(setup.repo.path / "out"),
                        f"--key={setup.desk_m4.path}")
    assert code == 0, err
    assert out.startswith(f"specgate sign: {setup.bundle.path / SIGNATURE_NAME} signed by SHA256:")
    assert f"commit {setup.repo.commit}" in out
    code, out, _ = cli(capsys, configure_gate_parser, run_gate, *gate_args)
    assert (code, out.splitlines()[1:]) == (0, ["specgate gate: accepted AC-10"])
    code, out, err = cli(capsys, configure_sign_parser, run_sign, str(setup.bundle.path),
                         f"--key={setup.desk_m4.path}", "--json")
    document = json.loads(out)
    assert code == 0 and document["schema"] == "specgate.sign-result/1", err
    assert (document["commit"], document["signatures"]) == (setup.repo.commit, 1)
    # Redacted like every JSON the commands print (the user name in a path is a secret there).
    assert document["envelope"].endswith(f"/{setup.bundle.path.name}/{SIGNATURE_NAME}")
    assert document["keyid"].startswith("SHA256:") and document["files"] > 1
    rsa = ssh_key(tmp_path, "id_rsa", kind="rsa")
    code, _, err = cli(capsys, configure_sign_parser, run_sign, str(setup.bundle.path), f"--key={rsa.path}")
    assert (code, err) == (2, f"specgate sign: error: {rsa.path}: key type RSA; specgate signs with Ed25519 "
                              "keys only (make one with: ssh-keygen -t ed25519)\n")
    no_policy = tmp_path / "plain.toml"
    no_policy.write_text("[tool.specgate.hosts.gb10]\ncuda_sm = '12.1'\n" + UNPINNED_ACS)
    without = [*gate_args[:-1], f"--trusted-config={no_policy}", "--require-signatures"]
    code, out, err = cli(capsys, configure_gate_parser, run_gate, *without)
    assert (code, out.splitlines()[1]) == (
        1, f"trust policy: none in {no_policy}, and signatures are required (under CI, or "
        "--require-signatures): enrol signers in the base branch's [tool.specgate.trust], or pass "
        "--allow-unsigned to accept unsigned evidence",
    )


def test_refuses_to_sign_a_bundle_that_does_not_match_its_manifest(setup: Setup) -> None:
    (setup.bundle.path / "AC-11.json").write_text("{}\n")
    with pytest.raises(SigningError, match=r"does not match its manifest, refusing to sign it: AC-11\.json"):
        sign(setup.bundle.path, setup.desk_m4)


SIGNED_SPEC = """
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-T", title="signed")
def test_one(evidence):
    evidence.measure("median_speedup", 1.6, at_least=1.4)
"""


def key_material(key: Key) -> list[bytes]:
    """Every form the private key could leak in: raw seed (bytes, hex, base64) and the file's lines."""
    text = key.path.read_bytes()
    private = load_signing_key(key.path, {}).private_key
    raw = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    body = [line for line in text.splitlines() if line and not line.startswith(b"-----")]
    return [raw, raw.hex().encode(), base64.b64encode(raw).rstrip(b"="), text, *body]


@pytest.mark.parametrize(("kind", "workers"), [("pem", 0), ("openssh", 0), ("pem", 2)])
def test_run_signs_at_session_end_and_no_private_key_byte_enters_the_bundle(
    pytester: pytest.Pytester, tmp_path: Path, kind: str, workers: int
) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    key = pem_key(keys, "run") if kind == "pem" else ssh_key(keys, "id_ed25519")
    pytester.makepyfile(test_signed=SIGNED_SPEC)
    (pytester.path / ".gitignore").write_text("__pycache__/\nout/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "specs")
    options = ["--specgate-evidence=out", f"--specgate-sign-key={key.path}", "-p", "no:cacheprovider"]
    if workers:
        pytest.importorskip("xdist")
        result = pytester.runpytest_subprocess(*options, "-n", str(workers))
    else:
        result = pytester.runpytest(*options)
    result.assert_outcomes(passed=1)
    fingerprint = load_signing_key(key.path, {}).keyid
    result.stdout.fnmatch_lines([f"specgate: signed {SIGNATURE_NAME} with {fingerprint} (* files, commit *)"])
    (bundle,) = (pytester.path / "out").glob("*/manifest.json")
    contents = [path.read_bytes() for path in bundle.parent.rglob("*") if path.is_file()]
    assert (bundle.parent / SIGNATURE_NAME).is_file() and len(contents) >= 6
    for secret in key_material(key):
        assert len(secret) >= 32
        assert not any(secret in data for data in contents)


def test_sign_key_option_errors_before_any_test_runs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_signed=SIGNED_SPEC)
    result = pytester.runpytest(f"--specgate-sign-key={tmp_path / 'k.pem'}")
    result.stderr.fnmatch_lines(["*--specgate-sign-key=*k.pem: signs the evidence bundle, but no "
                                 "--specgate-evidence directory was given*"])
    result = pytester.runpytest("--specgate-evidence=out", f"--specgate-sign-key={tmp_path / 'missing.pem'}")
    result.stderr.fnmatch_lines(["*--specgate-sign-key: *missing.pem: the signing key not found"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "out").exists()


def test_ci_key_without_profiles_vouches_for_a_waived_skipped_hardware_ac_but_not_a_run_one(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    ci, desk = pem_key(tmp_path, "ci"), pem_key(tmp_path, "desk")
    policy = load_policy(write_policy(tmp_path, {"ci": (ci, []), "desk-m4": (desk, ["m4-16gb"])}))
    run = SyntheticRun(git_repo.path, TEST_ENV)
    skipped = {**M4_HARDWARE, "matched": False, "reasons": ["needs Apple M4; host: linux"]}
    waived = AC10 | {"waived_to": "PR-C", "reason": "no M4 before PR-C"}
    run.run_test("acceptance/test_ac10.py::test_speedup", waived, outcome="skipped", hardware=skipped)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    bundle = run.finish()
    sign(bundle.path, ci)
    body = tmp_path / "PR.md"
    body.write_text(bundle.markdown)
    gates = declared_gates(["PR-A", "PR-B", "PR-C"], "test")
    commit = full(git_repo.commit)
    trusted = replace(policy, gates=gates)
    verdict = evaluate_gate(body, [bundle.path], ["AC-10", "AC-11"], commit, gates[1], trusted)
    assert (verdict.accepted, verdict.problems) == (("AC-10", "AC-11"), ())
    ran = hardware_bundle(git_repo)
    sign(ran.path, ci)
    body.write_text(ran.markdown)
    verdict = evaluate_gate(body, [ran.path], ["AC-10", "AC-11"], commit, trusted=policy)
    assert verdict.accepted == ()
    assert [problem[:50] for problem in verdict.problems] == [
        f"{ac}: hardware profile m4-16gb: signed by ci (SHA256:"[:50] for ac in ("AC-10", "AC-11")
    ], "on the M4 host even AC-11, which claims no hardware, needs the M4's signer"


def test_hardware_no_trusted_profile_covers_cannot_be_vouched_for(git_repo: GitRepo, tmp_path: Path) -> None:
    desk = pem_key(tmp_path, "desk")
    policy = load_policy(write_policy(tmp_path, {"desk-m4": (desk, ["m4-16gb"])}))
    small_m4 = {**M4_HOST_FACTS, "memory_bytes": 8 * 1024**3}
    run = SyntheticRun(git_repo.path, TEST_ENV, host_facts=small_m4)
    inline = {**M4_HARDWARE, "profile": None, "requirement": {"apple": "M4"}}
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine(REAL_ENGINE)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder, hardware=inline)
    bundle = run.finish()
    sign(bundle.path, desk)
    body = tmp_path / "PR.md"
    body.write_text(bundle.markdown)
    verdict = evaluate_gate(body, [bundle.path], ["AC-10"], full(git_repo.commit), trusted=policy)
    assert verdict.problems == (
        "AC-10: acceptance/test_ac10.py::test_speedup ran on hardware no trusted host profile covers "
        "(macOS 15.3 arm64, Apple M4, 8.0 GB), and the trust policy enrolls signers per profile: "
        "name a [tool.specgate.hosts] profile in its @pytest.mark.hardware",
    )
