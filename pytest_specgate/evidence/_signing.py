"""DSSE envelopes over a bundle's in-toto Statement, signed with Ed25519 keys.

A bundle's digests are unkeyed: whoever edits a record can recompute them. A signature by a key
the repository enrolls is what ties a bundle to a host. The signed Statement's subjects are the
source commit and every file of the bundle, ``manifest.json`` included, by sha256, so neither a
file nor the manifest can change around it. The envelope itself lives beside the manifest and
outside it: signing after the run (``specgate sign``) leaves the bundle digest, and so the PR
body, unchanged.

Keys are Ed25519, as PEM (PKCS#8) or as an OpenSSH key from ``ssh-keygen -t ed25519``; the
cryptography is PyCA ``cryptography``. Only the envelope and the key's public fingerprint reach
the bundle; the private key is read, used and dropped.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.contracts.extras import missing_extra

try:
    from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_private_key,
        load_pem_public_key,
        load_ssh_private_key,
        load_ssh_public_key,
    )
except ImportError as error:  # the module is imported only where signatures are made or checked
    raise missing_extra("signing and checking signatures", "sign", error) from None

from pytest_specgate.contracts.host import HostFactsError, host_facts_from_dict
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.safe_read import SafeReadError, digest_regular_file, read_regular_file
from pytest_specgate.contracts.validation import JOB_NONCE
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._bundle import (
    NONCE_FIELD,
    PASSPHRASE_ENV,
    SIGNATURE_NAME,
    STATEMENT_NAME,
    BundleError,
    files_on_disk,
    load_bundle,
    read_bundle_bytes,
    read_records,
    record_lines,
    verify_bundle,
)
from pytest_specgate.evidence._jsonio import canonical_json, pretty_json, replace_atomically, sha256_hex
from pytest_specgate.evidence._record_split import RECORDS_NAME, record_line_name
from pytest_specgate.evidence._redact import Redactor

PAYLOAD_TYPE = "application/vnd.in-toto+json"
COMMIT_SUBJECT = "source"
_OPENSSH_PRIVATE = b"-----BEGIN OPENSSH PRIVATE KEY-----"
_ENVELOPE_FIELDS = frozenset({"payload", "payloadType", "signatures"})
_SIGNATURE_FIELDS = frozenset({"keyid", "sig"})
_KEY_LIMIT = 64 * 1024
"""An Ed25519 private key file is a few hundred bytes; anything past this is not one."""


class SigningError(Exception):
    """A key or bundle that cannot be signed; the message names the file and what was wrong."""


class EnvelopeError(Exception):
    """A signature file that cannot be read as the envelope ``specgate sign`` writes."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, so the type cannot be swapped."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def key_fingerprint(public_key: Ed25519PublicKey) -> str:
    """``SHA256:…`` exactly as ``ssh-keygen -lf`` prints it: the keyid of every signature."""
    line = public_key.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


@dataclass(frozen=True)
class SigningKey:
    private_key: Ed25519PrivateKey
    keyid: str


def _key_kind(key: object) -> str:
    name = type(key).__name__.removeprefix("_").removesuffix("PrivateKey").removesuffix("PublicKey")
    return name or type(key).__name__


def load_signing_key(path: Path, environ: Mapping[str, str]) -> SigningKey:
    """An Ed25519 private key from a PEM or OpenSSH file; the passphrase, if any, from the env."""
    try:
        data = read_regular_file(path, "the signing key", limit=_KEY_LIMIT)
    except SafeReadError as error:
        raise SigningError(str(error)) from None
    if data.lstrip().startswith((b"ssh-", b"-----BEGIN PUBLIC KEY-----")):
        raise SigningError(f"{path}: a public key; signing needs the private key it belongs to")
    passphrase = environ.get(PASSPHRASE_ENV)
    password = passphrase.encode() if passphrase else None
    loader = load_ssh_private_key if data.lstrip().startswith(_OPENSSH_PRIVATE) else load_pem_private_key
    try:
        key = loader(data, password)
    except TypeError:
        if password is None:
            raise SigningError(f"{path}: the key is passphrase-protected: set {PASSPHRASE_ENV}") from None
        raise SigningError(f"{path}: the key is not encrypted, but {PASSPHRASE_ENV} is set") from None
    except UnsupportedAlgorithm as error:
        if "bcrypt" in str(error):
            raise SigningError(
                f"{path}: a passphrase-protected OpenSSH key needs the bcrypt package "
                "(pip install 'pytest-specgate[ssh-passphrase]')"
            ) from None
        raise SigningError(f"{path}: unsupported key: {error}") from None
    except ValueError as error:
        reason = "wrong passphrase, or " if password is not None else ""
        raise SigningError(f"{path}: not a readable PEM or OpenSSH private key ({reason}{error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(
            f"{path}: key type {_key_kind(key)}; specgate signs with Ed25519 keys only "
            "(make one with: ssh-keygen -t ed25519)"
        )
    return SigningKey(private_key=key, keyid=key_fingerprint(key.public_key()))


def load_public_key(text: str) -> Ed25519PublicKey:
    """An Ed25519 public key from an ``ssh-ed25519 AAAA…`` line or a PEM block (ValueError if not)."""
    data = text.strip().encode()
    loader = load_pem_public_key if data.startswith(b"-----BEGIN") else load_ssh_public_key
    try:
        key = loader(data)
    except (ValueError, UnsupportedAlgorithm) as error:
        raise ValueError(f"not an OpenSSH public key line or a PEM public key ({error})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"key type {_key_kind(key)}; only Ed25519 keys can be enrolled")
    return key


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "payload": base64.b64encode(self.payload).decode(),
            "payloadType": self.payload_type,
            "signatures": [
                {"keyid": signature.keyid, "sig": base64.b64encode(signature.sig).decode()}
                for signature in self.signatures
            ],
        }

    def verified_by(self, signature: Signature, public_key: Ed25519PublicKey) -> bool:
        try:
            public_key.verify(signature.sig, pae(self.payload_type, self.payload))
        except InvalidSignature:
            return False
        return True


def _base64(value: JsonValue, what: str) -> bytes:
    """Standard base64; a second spelling of the same bytes fails the envelope's canonical-form check."""
    if not isinstance(value, str):
        raise EnvelopeError(f"{what} must be a base64 string, found {type(value).__name__}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as error:
        raise EnvelopeError(f"{what} is not base64: {error}") from None


def envelope_from_bytes(data: bytes) -> Envelope:
    """Parse an envelope that must be byte-identical to what :func:`sign_bundle` writes."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EnvelopeError(f"not JSON: {error}") from None
    if not isinstance(document, dict) or set(document) != _ENVELOPE_FIELDS:
        found = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise EnvelopeError(f"fields are {found}, expected {sorted(_ENVELOPE_FIELDS)}")
    if document["payloadType"] != PAYLOAD_TYPE:
        raise EnvelopeError(f"payloadType is {document['payloadType']!r}, expected {PAYLOAD_TYPE!r}")
    raw_signatures = document["signatures"]
    if not isinstance(raw_signatures, list) or not raw_signatures:
        raise EnvelopeError("holds no signature")
    signatures = []
    for index, raw in enumerate(raw_signatures):
        if not isinstance(raw, dict) or set(raw) != _SIGNATURE_FIELDS or not isinstance(raw["keyid"], str):
            raise EnvelopeError(f"signatures[{index}] must be {{'keyid': str, 'sig': base64}}")
        sig = _base64(raw["sig"], f"signatures[{index}]")
        signatures.append(Signature(keyid=raw["keyid"], sig=sig))
    envelope = Envelope(PAYLOAD_TYPE, _base64(document["payload"], "payload"), tuple(signatures))
    if pretty_json(envelope.to_json()).encode() != data:
        raise EnvelopeError("not byte-identical to its canonical form (edited after signing)")
    return envelope


@dataclass(frozen=True)
class SignedStatement:
    """What a verified envelope says: the commit and each file's sha256."""

    commit: str
    files: Mapping[str, str]


def statement_from_payload(payload: bytes) -> SignedStatement:
    """The commit and file subjects of a Statement; anything else among its subjects is refused."""
    try:
        statement = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EnvelopeError(f"the signed payload is not JSON: {error}") from None
    subjects = statement.get("subject") if isinstance(statement, dict) else None
    if not isinstance(subjects, list):
        raise EnvelopeError("the signed payload is not an in-toto Statement with subjects")
    commits: list[str] = []
    files: dict[str, str] = {}
    for subject in subjects:
        name = subject.get("name") if isinstance(subject, dict) else None
        digest = subject.get("digest") if isinstance(subject, dict) else None
        if not isinstance(name, str) or not isinstance(digest, dict) or len(digest) != 1:
            raise EnvelopeError(f"subject {subject!r} must have a name and exactly one digest")
        (algorithm, value), = digest.items()
        if algorithm == "gitCommit" and name == COMMIT_SUBJECT and isinstance(value, str):
            commits.append(value)
        elif algorithm == "sha256" and isinstance(value, str) and name not in files:
            files[name] = value
        else:
            raise EnvelopeError(f"subject {name!r}: unexpected or repeated digest {digest!r}")
    if len(commits) != 1:
        raise EnvelopeError(f"the statement names {len(commits)} source commits, expected exactly one")
    return SignedStatement(commit=commits[0], files=files)


def file_digests(bundle_dir: Path) -> dict[str, str]:
    """sha256 of every file the signature must cover: all but the signature itself (each read
    through the safe reader: a symlink, FIFO or device among them is a :class:`BundleError`),
    and of every line of a format-2 ``records.jsonl`` (``records.jsonl#AC-10``), so a reviewer
    can check one AC's signed record without the others."""
    digests = {}
    for name, path in files_on_disk(bundle_dir, with_manifest=True).items():
        try:
            digests[name] = digest_regular_file(path, "bundle file")[0]
        except SafeReadError as error:
            raise BundleError(str(error)) from None
        if name == RECORDS_NAME:
            digests.update(record_line_digests(read_bundle_bytes(path)))
    return digests


def record_line_digests(data: bytes) -> dict[str, str]:
    """Each line's sha256 under the name of the AC it holds (``#line-N`` where a line names none)."""
    digests = {}
    for number, line in enumerate(record_lines(data), start=1):
        try:
            ac_id = json.loads(line)["ac"]["id"]
        except (ValueError, TypeError, KeyError, RecursionError):
            ac_id = None
        name = record_line_name(ac_id) if isinstance(ac_id, str) else f"{RECORDS_NAME}#line-{number}"
        digests[name if name not in digests else f"{RECORDS_NAME}#line-{number}"] = sha256_hex(line)
    return digests


def subject_mismatches(statement: SignedStatement, on_disk: Mapping[str, str]) -> list[str]:
    """Every way the bundle's files differ from the statement's subjects."""
    signed = statement.files
    problems = [f"{name}: in the bundle but not signed" for name in sorted(set(on_disk) - set(signed))]
    problems += [f"{name}: signed but missing" for name in sorted(set(signed) - set(on_disk))]
    problems += [
        f"{name}: sha256 {on_disk[name][:12]}… differs from the signed {statement.files[name][:12]}…"
        for name in sorted(set(on_disk) & set(statement.files))
        if on_disk[name] != statement.files[name]
    ]
    return problems


def statement_to_sign(bundle_dir: Path) -> tuple[dict[str, JsonValue], SignedStatement]:
    """The bundle's test-result Statement, its subjects widened to the commit and every file.

    Only a bundle that verifies is signed: every file as its manifest lists it and every AC
    record valid under its schema (a truncated, NaN, deeply nested, non-UTF-8 or oversized
    record is refused here, as ``render`` and the gate refuse it).
    """
    path = bundle_dir / STATEMENT_NAME
    try:
        bundle = load_bundle(bundle_dir)
        problems = verify_bundle(bundle)
        if problems:
            raise SigningError(
                f"{bundle_dir}: the bundle does not match its manifest, refusing to sign it: {problems[0]}"
            )
        read_records(bundle)
        if STATEMENT_NAME not in bundle.files:
            raise SigningError(
                f"{bundle_dir}: no {STATEMENT_NAME}: the run knew no git commit, so there is nothing to "
                "bind a signature to"
            )
        data = read_bundle_bytes(path)
        commit = statement_from_payload(data).commit
        digests = file_digests(bundle_dir)
    except BundleError as error:
        raise SigningError(f"{error}; refusing to sign it") from None
    except EnvelopeError as error:
        raise SigningError(f"{path}: {error}") from None
    statement = {
        **json.loads(data),
        "subject": [
            {"name": COMMIT_SUBJECT, "digest": {"gitCommit": commit}},
            *({"name": name, "digest": {"sha256": digest}} for name, digest in digests.items()),
        ],
    }
    return statement, SignedStatement(commit=commit, files=digests)


WITNESS_IGNORED: frozenset[str] = frozenset({"thermal_state", "source"})
"""Host-fact fields the signer's probe does not compare: the thermal state changes from one
minute to the next, and ``source`` says how the facts were obtained (checked on its own)."""


def _shown(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def witness_problems(records: Mapping[str, AcRecord], probed: Mapping[str, JsonValue]) -> list[str]:
    """Why the signer's own probe of this host does not vouch for the records' host facts.

    The facts must come from the run's unedited probe (a file, a hook or an edit is a simulation
    the signer cannot witness) and equal, field by field, what the signer's probe found now
    (``probed``: ``HostFacts.to_dict()``, redacted; the recorded facts are read into the same shape).
    """
    problems: list[str] = []
    for ac_id, record in sorted(records.items()):
        provenance = record.host.provenance
        if provenance is None:
            problems.append(f"{ac_id}: the record does not say where its host facts came from")
        elif provenance.origin != "probe" or provenance.simulated:
            detail = f" ({provenance.detail})" if provenance.detail else ""
            problems.append(f"{ac_id}: host facts from {provenance.origin}{detail}, not the run's probe: "
                            "a signer witnesses only what its own probe of this host finds")
        try:
            facts = host_facts_from_dict(record.host.facts, where=f"{ac_id} host facts").to_dict()
        except HostFactsError as error:
            problems.append(f"{ac_id}: the recorded host facts cannot be read: {error}")
            continue
        fields = sorted((set(facts) | set(probed)) - WITNESS_IGNORED)
        differing = [f"{name}: recorded {_shown(facts.get(name))}, probed {_shown(probed.get(name))}"
                     for name in fields if facts.get(name) != probed.get(name)]
        if differing:
            problems.append(f"{ac_id}: host facts differ from this host's own probe: {'; '.join(differing)}")
    return list(dict.fromkeys(problems))


def special_entries(bundle_dir: Path) -> list[str]:
    """Every symlink, FIFO, socket or device anywhere under ``bundle_dir`` (bundle-relative): a
    signer copies and signs only regular files and folders, so a link a spec user planted towards
    the key's folder is refused before anything reads through it."""
    found: list[str] = []
    for folder, directories, files in os.walk(bundle_dir, followlinks=False):
        for name in (*directories, *files):
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = "a symlink" if stat.S_ISLNK(mode) else "a special file"
                found.append(f"{path.relative_to(bundle_dir).as_posix()} ({kind})")
    return sorted(found)


def job_problems(bundle_dir: Path, commit: str | None, nonce: str | None) -> list[str]:
    """Why the bundle is not this job's: its statement names another commit than ``commit`` (the
    job's head) or carries another nonce than ``nonce`` (the one the runner passed to pytest)."""
    if commit is None and nonce is None:
        return []
    path = bundle_dir / STATEMENT_NAME
    try:
        data = read_bundle_bytes(path)
        statement = json.loads(data)
        recorded = statement_from_payload(data).commit
    except (BundleError, EnvelopeError, json.JSONDecodeError) as error:
        return [f"{STATEMENT_NAME}: {error}: the bundle cannot be tied to this job"]
    problems = []
    if commit is not None and recorded != commit.lower():
        problems.append(f"the bundle is for commit {recorded}, not this job's {commit.lower()}")
    predicate = statement.get("predicate") if isinstance(statement, dict) else None
    carried = predicate.get(NONCE_FIELD) if isinstance(predicate, dict) else None
    if nonce is not None and carried != nonce:
        problems.append(f"the bundle carries nonce {carried!r}, not the nonce this job passed to pytest")
    return problems


@dataclass(frozen=True)
class SignedBundle:
    path: Path
    keyid: str
    statement: SignedStatement
    signatures: int


def _without_job_nonce(statement: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """``statement`` less its predicate's nonce when that has a job nonce's form (:data:`JOB_NONCE`,
    what ``--specgate-nonce`` accepts): random characters the runner drew, public by design, which
    the generic detector would read as a key. Anything else under that field is checked."""
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict) or not isinstance(nonce := predicate.get(NONCE_FIELD), str):
        return statement
    if JOB_NONCE.match(nonce) is None:
        return statement
    return {**statement, "predicate": {k: v for k, v in predicate.items() if k != NONCE_FIELD}}


def sign_bundle(bundle_dir: Path, key: SigningKey, redactor: Redactor) -> SignedBundle:
    """Write (or countersign) ``statement.intoto.dsse.json`` beside the manifest."""
    statement, signed = statement_to_sign(bundle_dir)
    checked = _without_job_nonce(statement)
    if redactor.value(checked) != checked:
        raise SigningError(f"{bundle_dir}: redaction would change the statement; refusing to sign it")
    payload = canonical_json(statement).encode()
    target = bundle_dir / SIGNATURE_NAME
    others: tuple[Signature, ...] = ()
    if target.exists() or target.is_symlink():
        try:
            existing = envelope_from_bytes(read_bundle_bytes(target))
        except (EnvelopeError, BundleError) as error:
            raise SigningError(f"{target}: {error}; delete it to sign again") from None
        if existing.payload != payload:
            raise SigningError(
                f"{target}: signs other contents than the bundle now holds; delete it to sign again"
            )
        others = tuple(s for s in existing.signatures if s.keyid != key.keyid)
    signature = Signature(keyid=key.keyid, sig=key.private_key.sign(pae(PAYLOAD_TYPE, payload)))
    envelope = Envelope(PAYLOAD_TYPE, payload, (*others, signature))
    replace_atomically(target, pretty_json(envelope.to_json()).encode())
    return SignedBundle(path=target, keyid=key.keyid, statement=signed, signatures=len(envelope.signatures))
