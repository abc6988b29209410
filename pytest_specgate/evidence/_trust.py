"""The repository's trust policy and the gate's signature check against it.

``[tool.specgate.trust.signers.<name>]`` enrolls a public key for the host profiles it may vouch
for (the desk M4's key for ``m4-16gb``, the GB10 box's for ``gb10``). Under a policy every AC the
gate accepts must come from a bundle whose envelope verifies under an enrolled key and whose
signed subjects are exactly the bundle's files and commit; an AC whose tests ran on a matched
hardware profile also needs a signer enrolled for that profile. Unsigned ACs without hardware are
refused too: otherwise dropping the hardware requirement from a record and deleting the envelope
would turn any forgery into an "unsigned, no hardware" AC that passes.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._bundle import SIGNATURE_NAME, Bundle, BundleError, read_bundle_bytes

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

TRUST_TABLE = "[tool.specgate.trust]"
_SIGNER_FIELDS = frozenset({"key", "profiles"})


class TrustPolicyError(Exception):
    """A trust policy that cannot be read; the message names the file and the signer."""


@dataclass(frozen=True)
class Signer:
    name: str
    keyid: str
    public_key: Ed25519PublicKey = field(repr=False)
    profiles: tuple[str, ...]

    def label(self) -> str:
        return f"{self.name} ({self.keyid})"


@dataclass(frozen=True)
class TrustPolicy:
    source: Path
    signers: tuple[Signer, ...]

    def signer(self, keyid: str) -> Signer | None:
        return next((signer for signer in self.signers if signer.keyid == keyid), None)

    def allowed(self, profile: str) -> str:
        enrolled = [signer.label() for signer in self.signers if profile in signer.profiles]
        return ", ".join(enrolled) or "no enrolled signer"


def _signer(name: str, table: object, where: str, declared: Sequence[str] | None) -> Signer:
    from pytest_specgate.evidence._signing import key_fingerprint, load_public_key

    if not isinstance(table, dict):
        raise TrustPolicyError(f"{where} must be a table with key = ... and profiles = [...]")
    unknown = sorted(set(table) - _SIGNER_FIELDS)
    if unknown or "key" not in table:
        raise TrustPolicyError(f"{where}: expected the fields key and profiles, found {sorted(table)}")
    key_text, profiles = table["key"], table.get("profiles", [])
    if not isinstance(key_text, str):
        raise TrustPolicyError(f"{where}: key must be an 'ssh-ed25519 AAAA…' line or a PEM public key")
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise TrustPolicyError(f"{where}: profiles must be a list of host profile names, got {profiles!r}")
    undeclared = sorted(set(profiles) - set(declared)) if declared is not None else []
    if undeclared:
        raise TrustPolicyError(
            f"{where}: profile {undeclared[0]!r} is not declared in [tool.specgate.hosts] "
            f"(declared: {', '.join(declared or ()) or 'none'})"
        )
    try:
        public_key = load_public_key(key_text)
    except ValueError as error:
        raise TrustPolicyError(f"{where}: key: {error}") from None
    keyid = key_fingerprint(public_key)
    return Signer(name=name, keyid=keyid, public_key=public_key, profiles=tuple(profiles))


def trust_policy_from_table(table: object, source: Path, declared: Sequence[str] | None) -> TrustPolicy:
    """``declared``: the host profiles the same file declares (None: the file declares none)."""
    if not isinstance(table, dict) or set(table) != {"signers"} or not isinstance(table["signers"], dict):
        raise TrustPolicyError(f"{source}: {TRUST_TABLE} must hold exactly one table, signers")
    signers = tuple(
        _signer(str(name), raw, f"{source}: [tool.specgate.trust.signers.{name}]", declared)
        for name, raw in table["signers"].items()
    )
    if not signers:
        raise TrustPolicyError(f"{source}: {TRUST_TABLE} enrolls no signer")
    seen: dict[str, str] = {}
    for signer in signers:
        if signer.keyid in seen:
            raise TrustPolicyError(
                f"{source}: signers {seen[signer.keyid]} and {signer.name} share the key {signer.keyid}"
            )
        seen[signer.keyid] = signer.name
    return TrustPolicy(source=source, signers=signers)


def load_trust_policy(path: Path) -> TrustPolicy | None:
    """The policy in ``path``'s ``[tool.specgate.trust]``; None when the file has no such table."""
    try:
        document = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise TrustPolicyError(f"{path}: trust policy file not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise TrustPolicyError(f"{path}: cannot read the trust policy: {error}") from None
    tool = document.get("tool", {})
    specgate = tool.get("specgate", {}) if isinstance(tool, dict) else {}
    if not isinstance(specgate, dict) or "trust" not in specgate:
        return None
    hosts = specgate.get("hosts")
    declared = sorted(hosts) if isinstance(hosts, dict) else None
    return trust_policy_from_table(specgate["trust"], path, declared)


@dataclass(frozen=True)
class BundleTrust:
    """What a bundle's envelope proves under the policy, judged once per bundle."""

    signers: tuple[Signer, ...]
    found: str
    problem: str | None
    commit: str | None


def judge_bundle(bundle_dir: Path, policy: TrustPolicy) -> BundleTrust:
    """Verify the envelope: enrolled keys only, and subjects exactly this bundle's files."""
    from pytest_specgate.evidence._signing import (
        EnvelopeError,
        envelope_from_bytes,
        file_digests,
        statement_from_payload,
        subject_mismatches,
    )

    path = bundle_dir / SIGNATURE_NAME
    if not path.is_file() or path.is_symlink():
        return BundleTrust((), "no signature", f"unsigned (no {SIGNATURE_NAME})", None)
    try:
        envelope = envelope_from_bytes(read_bundle_bytes(path))
    except (EnvelopeError, BundleError) as error:
        return BundleTrust((), "an unreadable signature", f"{SIGNATURE_NAME}: {error}", None)
    verified: list[Signer] = []
    found: list[str] = []
    for signature in envelope.signatures:
        signer = policy.signer(signature.keyid)
        if signer is None:
            found.append(f"unknown key {signature.keyid} (not in the trust policy)")
        elif envelope.verified_by(signature, signer.public_key):
            verified.append(signer)
            found.append(signer.label())
        else:
            found.append(f"a signature claiming {signer.label()} that does not verify")
    described = "; ".join(found)
    if not verified:
        return BundleTrust((), described, f"signed only by {described}", None)
    try:
        statement = statement_from_payload(envelope.payload)
    except EnvelopeError as error:
        return BundleTrust((), described, f"{SIGNATURE_NAME}: {error}", None)
    mismatches = subject_mismatches(statement, file_digests(bundle_dir))
    if mismatches:
        more = f" (and {len(mismatches) - 3} more)" if len(mismatches) > 3 else ""
        shown = "; ".join(mismatches[:3]) + more
        problem = f"the statement signed by {described} does not match this bundle: {shown}"
        return BundleTrust((), described, problem, statement.commit)
    return BundleTrust(tuple(verified), described, None, statement.commit)


def vouched_profiles(record: Mapping[str, JsonValue]) -> dict[str | None, str]:
    """Profile of each test that claims it ran on matching hardware (None: no named profile) -> a nodeid."""
    tests = record.get("tests")
    profiles: dict[str | None, str] = {}
    for test in tests if isinstance(tests, list) else []:
        hardware = test.get("hardware") if isinstance(test, Mapping) else None
        if isinstance(hardware, Mapping) and hardware.get("matched") is True:
            profile = hardware.get("profile")
            profiles.setdefault(profile if isinstance(profile, str) else None, str(test.get("nodeid")))
    return profiles


def _recorded_commit(record: Mapping[str, JsonValue]) -> str | None:
    source = record.get("source")
    commit = source.get("commit") if isinstance(source, Mapping) else None
    return commit if isinstance(commit, str) else None


def ac_trust_problems(
    record: Mapping[str, JsonValue], trust: BundleTrust, policy: TrustPolicy, commit: str | None
) -> list[str]:
    """Why the policy refuses this AC (empty: the signature vouches for it)."""
    profiles = vouched_profiles(record)
    if trust.problem is not None:
        if not profiles:
            everyone = ", ".join(signer.label() for signer in policy.signers)
            return [f"{trust.problem}; under the trust policy ({policy.source}) every AC needs a signature "
                    f"by an enrolled signer ({everyone})"]
        return [
            f"hardware profile {profile or '(none named)'}: {trust.problem}; "
            f"{profile or 'it'} may be vouched for by {policy.allowed(profile) if profile else 'no signer'}"
            for profile in profiles
        ]
    problems: list[str] = []
    recorded = _recorded_commit(record)
    if trust.commit != recorded:
        problems.append(f"the signed statement is for commit {trust.commit}, the record for {recorded}")
    if commit is not None and not (trust.commit or "").lower().startswith(commit):
        problems.append(f"the signed statement is for commit {trust.commit}, not {commit}")
    for profile, nodeid in profiles.items():
        if profile is None:
            problems.append(
                f"{nodeid} ran on hardware no host profile names, and the trust policy enrolls signers "
                "per profile: name a [tool.specgate.hosts] profile in its @pytest.mark.hardware"
            )
        elif not any(profile in signer.profiles for signer in trust.signers):
            problems.append(
                f"hardware profile {profile}: signed by {trust.found}, not enrolled for {profile}; "
                f"{profile} may be vouched for by {policy.allowed(profile)}"
            )
    return problems


class TrustCheck:
    """The gate's view of the policy: each bundle's envelope is judged once, then each AC."""

    def __init__(self, policy: TrustPolicy) -> None:
        self.policy = policy
        self._bundles: dict[Path, BundleTrust] = {}

    def problems(self, bundle: Bundle, record: Mapping[str, JsonValue], commit: str | None) -> list[str]:
        if bundle.path not in self._bundles:
            self._bundles[bundle.path] = judge_bundle(bundle.path, self.policy)
        return ac_trust_problems(record, self._bundles[bundle.path], self.policy, commit)
