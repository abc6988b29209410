"""The trust policy and the gate's signature check against it.

``[tool.specgate.trust.signers.<name>]`` enrolls a public key for the host profiles it may vouch
for (the desk M4's key for ``m4-16gb``, the GB10 box's for ``gb10``), optionally until it
``expires``. Under a policy every AC the gate accepts must come from a bundle whose envelope
verifies under an enrolled, unexpired key and whose signed subjects are exactly the bundle's
files and commit. Which profiles an AC needs a signer for is derived here from the record's host
facts against the trusted profile definitions, never read from the profile label a test recorded
for itself: relabelling a test, or recording no label, must not let the GB10 key vouch for an M4.
Unsigned ACs without hardware are refused too: otherwise dropping the hardware requirement from
a record and deleting the envelope would turn any forgery into an "unsigned, no hardware" AC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.hardware import HostProfile
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._bundle import SIGNATURE_NAME, Bundle, BundleError, read_bundle_bytes

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

TRUST_TABLE = "[tool.specgate.trust]"
_SIGNER_FIELDS = frozenset({"key", "profiles", "expires"})


@dataclass(frozen=True)
class Signer:
    name: str
    keyid: str
    public_key: Ed25519PublicKey = field(repr=False)
    profiles: tuple[str, ...]
    expires: dt.datetime | None = None

    def label(self) -> str:
        return f"{self.name} ({self.keyid})"

    def expired(self, now: dt.datetime) -> bool:
        return self.expires is not None and now >= self.expires


@dataclass(frozen=True)
class TrustPolicy:
    source: str
    signers: tuple[Signer, ...]

    def signer(self, keyid: str) -> Signer | None:
        return next((signer for signer in self.signers if signer.keyid == keyid), None)

    def allowed(self, profile: str, now: dt.datetime) -> str:
        enrolled = [
            signer.label()
            for signer in self.signers
            if profile in signer.profiles and not signer.expired(now)
        ]
        return ", ".join(enrolled) or "no enrolled signer whose key has not expired"


def expiry(value: object, where: str) -> dt.datetime:
    """``expires``: a TOML or ISO date (the key stops vouching at 00:00 UTC that day) or datetime
    (UTC when it names no offset)."""
    if isinstance(value, str):
        try:
            timed = "T" in value or " " in value
            value = dt.datetime.fromisoformat(value) if timed else dt.date.fromisoformat(value)
        except ValueError:
            raise SpecgateInputError(f"{where}: expires {value!r} is not an ISO date or datetime") from None
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    raise SpecgateInputError(f"{where}: expires must be an ISO date or datetime, found {value!r}")


def _signer(name: str, table: object, where: str, declared: Sequence[str] | None) -> Signer:
    from pytest_specgate.evidence._signing import key_fingerprint, load_public_key

    if not isinstance(table, dict):
        raise SpecgateInputError(f"{where} must be a table with key = ... and profiles = [...]")
    unknown = sorted(set(table) - _SIGNER_FIELDS)
    if unknown or "key" not in table:
        raise SpecgateInputError(
            f"{where}: expected the fields key, profiles and expires, found {sorted(table)}"
        )
    key_text, profiles = table["key"], table.get("profiles", [])
    if not isinstance(key_text, str):
        raise SpecgateInputError(f"{where}: key must be an 'ssh-ed25519 AAAA…' line or a PEM public key")
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise SpecgateInputError(f"{where}: profiles must be a list of host profile names, got {profiles!r}")
    undeclared = sorted(set(profiles) - set(declared)) if declared is not None else []
    if undeclared:
        raise SpecgateInputError(
            f"{where}: profile {undeclared[0]!r} is not declared in [tool.specgate.hosts] "
            f"(declared: {', '.join(declared or ()) or 'none'})"
        )
    try:
        public_key = load_public_key(key_text)
    except ValueError as error:
        raise SpecgateInputError(f"{where}: key: {error}") from None
    expires = expiry(table["expires"], where) if "expires" in table else None
    keyid = key_fingerprint(public_key)
    return Signer(name=name, keyid=keyid, public_key=public_key, profiles=tuple(profiles), expires=expires)


def trust_policy_from_table(table: object, source: str, declared: Sequence[str] | None) -> TrustPolicy:
    """``declared``: the host profiles the same file declares (None: the file declares none)."""
    if not isinstance(table, dict) or set(table) != {"signers"} or not isinstance(table["signers"], dict):
        raise SpecgateInputError(f"{source}: {TRUST_TABLE} must hold exactly one table, signers")
    signers = tuple(
        _signer(str(name), raw, f"{source}: [tool.specgate.trust.signers.{name}]", declared)
        for name, raw in table["signers"].items()
    )
    if not signers:
        raise SpecgateInputError(f"{source}: {TRUST_TABLE} enrolls no signer")
    seen: dict[str, str] = {}
    for signer in signers:
        if signer.keyid in seen:
            raise SpecgateInputError(
                f"{source}: signers {seen[signer.keyid]} and {signer.name} share the key {signer.keyid}"
            )
        seen[signer.keyid] = signer.name
    return TrustPolicy(source=source, signers=signers)


@dataclass(frozen=True)
class BundleTrust:
    """What a bundle's envelope proves under the policy, judged once per bundle."""

    signers: tuple[Signer, ...]
    found: str
    problem: str | None
    commit: str | None


def judge_bundle(bundle_dir: Path, policy: TrustPolicy, now: dt.datetime) -> BundleTrust:
    """Verify the envelope: enrolled, unexpired keys only, and subjects exactly this bundle's files."""
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
        elif not envelope.verified_by(signature, signer.public_key):
            found.append(f"a signature claiming {signer.label()} that does not verify")
        elif signer.expires is not None and signer.expired(now):
            expired = signer.expires.isoformat()
            found.append(f"{signer.label()}, whose key expired {expired} and vouches for nothing")
        else:
            verified.append(signer)
            found.append(signer.label())
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


@dataclass(frozen=True)
class ProfileNeeds:
    """The trusted profiles an AC needs a signer for, and why its hardware facts cannot be vouched for."""

    profiles: tuple[str, ...]
    problems: tuple[str, ...]


NO_PROFILES = ProfileNeeds((), ())
"""Without trusted profiles or a trust policy there is nothing to derive a profile from or for."""


def profile_needs(
    record: AcRecord, hosts: Mapping[str, HostProfile], pinned: str | None = None
) -> ProfileNeeds:
    """Every trusted profile the recorded host facts satisfy, whatever label a test recorded, and
    the profile the trusted config pins for the AC (``pinned``), whatever the host matched: a
    pinned AC is never one that "matches no profile", which any enrolled signer could vouch for.

    A label names a trusted profile only if that profile is declared there, the test's recorded
    requirement keeps every clause of its trusted definition, and the host facts satisfy it; a
    test that matched hardware on a host no trusted profile covers cannot be vouched for at all.
    """
    from pytest_specgate.contracts.host import HostFactsError, host_facts_from_dict
    from pytest_specgate.selection.hardware import evaluate_requirement

    try:
        host = host_facts_from_dict(record.host.facts, where="recorded host facts")
    except HostFactsError as error:
        return ProfileNeeds((), (f"cannot derive its host profiles: {error}",))
    matching = tuple(
        name
        for name, profile in sorted(hosts.items())
        if evaluate_requirement(profile.requirement, host, _opted_in(profile)).matched
    )
    problems: list[str] = []
    if pinned is not None and pinned not in matching:
        problems.append(f"the recorded host ({host.summary()}) does not match {pinned}, the profile the "
                        f"trusted config pins for {record.ac.id} ({hosts[pinned].requirement.describe()})")
        matching = tuple(sorted((*matching, pinned)))
    for test in record.tests:
        hardware = test.hardware
        if hardware is None or not hardware.matched:
            continue
        label = hardware.profile
        if label is None:
            if not matching:
                problems.append(
                    f"{test.nodeid} ran on hardware no trusted host profile covers ({host.summary()}), and "
                    "the trust policy enrolls signers per profile: name a [tool.specgate.hosts] profile "
                    "in its @pytest.mark.hardware"
                )
            continue
        if label not in hosts:
            declared = ", ".join(sorted(hosts)) or "none"
            problems.append(
                f"{test.nodeid} names host profile {label}, which the trusted [tool.specgate.hosts] does "
                f"not declare (declared: {declared})"
            )
            continue
        changed = requirement_changes(hardware.requirement, hosts[label])
        if changed is not None:
            problems.append(f"{test.nodeid}: {changed}")
        elif label not in matching:
            problems.append(
                f"{test.nodeid} names host profile {label}, but the recorded host ({host.summary()}) does "
                f"not match its trusted definition ({hosts[label].requirement.describe()})"
            )
    return ProfileNeeds(matching, tuple(problems))


def _opted_in(profile: HostProfile) -> dict[str, str]:
    """The opt-in variable is not a host fact; the runner's own verdict already speaks for it."""
    return {profile.requirement.env: "1"} if profile.requirement.env else {}


def requirement_changes(
    recorded: Mapping[str, JsonValue] | None, trusted: HostProfile
) -> str | None:
    """Why a recorded requirement is not the trusted definition of its profile (refinements that
    add a clause are allowed; changing or dropping one is not), else None."""
    definition = trusted.requirement.to_dict()
    definition.pop("profile", None)
    stated = dict(recorded or {})
    for clause, value in sorted(definition.items()):
        if clause not in stated:
            return (
                f"recorded requirement of profile {trusted.name} drops its trusted clause "
                f"{clause} = {value!r}"
            )
        if stated[clause] != value:
            return (
                f"recorded requirement of profile {trusted.name} has {clause} = {stated[clause]!r}, "
                f"its trusted definition {clause} = {value!r}"
            )
    return None


def ac_trust_problems(
    needs: ProfileNeeds, record: AcRecord, trust: BundleTrust, policy: TrustPolicy, commit: str | None,
    now: dt.datetime,
) -> list[str]:
    """Why the policy refuses this AC (empty: the signature vouches for it)."""
    if trust.problem is not None:
        if not needs.profiles:
            everyone = ", ".join(signer.label() for signer in policy.signers)
            return [f"{trust.problem}; under the trust policy ({policy.source}) every AC needs a signature "
                    f"by an enrolled signer ({everyone})"]
        return [
            f"hardware profile {profile}: {trust.problem}; {profile} may be vouched for by "
            f"{policy.allowed(profile, now)}"
            for profile in needs.profiles
        ]
    problems: list[str] = []
    recorded = record.source.commit
    if trust.commit != recorded:
        problems.append(f"the signed statement is for commit {trust.commit}, the record for {recorded}")
    if commit is not None and not (trust.commit or "").lower().startswith(commit):
        problems.append(f"the signed statement is for commit {trust.commit}, not {commit}")
    problems += [
        f"hardware profile {profile}: signed by {trust.found}, not enrolled for {profile}; "
        f"{profile} may be vouched for by {policy.allowed(profile, now)}"
        for profile in needs.profiles
        if not any(profile in signer.profiles for signer in trust.signers)
    ]
    return problems


class TrustCheck:
    """The gate's view of the policy: each bundle's envelope is judged once, then each AC."""

    def __init__(self, policy: TrustPolicy, now: dt.datetime) -> None:
        self.policy = policy
        self.now = now
        self._bundles: dict[Path, BundleTrust] = {}

    def problems(
        self, bundle: Bundle, record: AcRecord, needs: ProfileNeeds, commit: str | None
    ) -> list[str]:
        if bundle.path not in self._bundles:
            self._bundles[bundle.path] = judge_bundle(bundle.path, self.policy, self.now)
        return ac_trust_problems(needs, record, self._bundles[bundle.path], self.policy, commit, self.now)
