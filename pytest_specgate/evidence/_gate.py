"""``specgate gate``: a PR body is accepted only if its evidence blocks are bound to intact,
qualifying, passing bundles for the right commit.

Problems with the evidence are *rejections* (exit 1, one line per problem, each naming the
AC). Inputs the gate cannot read at all are *bad input* (exit 2) and raise
:class:`GateInputError` naming the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.evidence._bundle import (
    Bundle,
    BundleError,
    ac_file_name,
    find_bundles,
    read_ac_record,
    verify_bundle,
)
from pytest_specgate.evidence._gates import GateName, GateOrderError, parse_gate_name
from pytest_specgate.evidence._jsonio import JsonValue
from pytest_specgate.evidence._markdown import EvidenceBlock, HiddenEvidence, PrBodyError, read_pr_body
from pytest_specgate.evidence._marker import AC_ID_FORMS, is_ac_id
from pytest_specgate.evidence._records import measurement_miss
from pytest_specgate.evidence._trust import TrustCheck, TrustPolicy

_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")


class GateInputError(Exception):
    """Input the gate cannot judge (exit 2)."""


@dataclass(frozen=True)
class GateVerdict:
    accepted: tuple[str, ...]
    problems: tuple[str, ...]


def read_text_input(path: Path, what: str) -> str:
    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        raise GateInputError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise GateInputError(f"{path}: cannot read {what}: {error}") from None


def load_all_bundles(directories: Sequence[Path]) -> list[Bundle]:
    bundles: list[Bundle] = []
    for directory in directories:
        try:
            found = find_bundles(directory)
        except BundleError as error:
            raise GateInputError(str(error)) from None
        if not found:
            raise GateInputError(
                f"{directory}: no evidence bundle (no manifest.json here or one level below)"
            )
        bundles += found
    return bundles


def _as_mapping(value: JsonValue) -> Mapping[str, JsonValue]:
    return value if isinstance(value, Mapping) else {}


def _parse_inputs(
    required: Sequence[str], commit: str | None, gate: str | None
) -> tuple[GateName | None, str | None]:
    for ac_id in required:
        if not is_ac_id(ac_id):
            raise GateInputError(f"--require {ac_id!r}: an AC id looks like {AC_ID_FORMS}")
    if commit is not None and not _COMMIT.match(commit):
        raise GateInputError(f"--commit {commit!r}: expected 7 to 64 hex digits")
    try:
        gate_name = None if gate is None else parse_gate_name(gate)
    except ValueError as error:
        raise GateInputError(f"--gate: {error}") from None
    return gate_name, None if commit is None else commit.lower()


@dataclass(frozen=True)
class PrBodyText:
    """A PR body already read (from stdin or a GitHub event); ``source`` names it in messages."""

    text: str
    source: str


def evaluate_gate(
    pr_body: Path | PrBodyText,
    evidence_dirs: Sequence[Path],
    required: Sequence[str],
    commit: str | None = None,
    gate: str | None = None,
    trust_policy: TrustPolicy | None = None,
) -> GateVerdict:
    """Judge a PR body against bundles; see the module docstring for exit semantics.

    With a ``trust_policy`` every AC must also be vouched for by an enrolled signer.
    """
    gate_name, wanted_commit = _parse_inputs(required, commit, gate)
    if isinstance(pr_body, Path):
        pr_body = PrBodyText(read_text_input(pr_body, "PR body"), str(pr_body))
    try:
        body = read_pr_body(pr_body.text, pr_body.source)
    except PrBodyError as error:
        raise GateInputError(str(error)) from None
    blocks = body.blocks
    bundles = load_all_bundles(evidence_dirs)
    acs = list(dict.fromkeys(required)) or sorted({block.ac_id for block in blocks})
    if not acs:
        raise GateInputError(
            f"{pr_body.source}: no '## <AC> evidence' block and no --require: nothing to gate"
        )
    problems: list[str] = []
    accepted: list[str] = []
    integrity: dict[Path, list[str]] = {}
    trust = None if trust_policy is None else TrustCheck(trust_policy)
    for ac_id in acs:
        ac_blocks = [b for b in blocks if b.ac_id == ac_id]
        if not ac_blocks and body.hidden_for(ac_id):
            problems.append(f"{ac_id}: {_hidden_only(ac_id, body.hidden_for(ac_id))}")
            continue
        found = _check_ac(ac_id, ac_blocks, bundles, integrity, wanted_commit, gate_name, trust)
        if found:
            problems += [f"{ac_id}: {problem}" for problem in found]
        else:
            accepted.append(ac_id)
    return GateVerdict(accepted=tuple(accepted), problems=tuple(problems))


def _hidden_only(ac_id: str, hidden: Sequence[HiddenEvidence]) -> str:
    where = hidden[0].describe()
    return (
        f"no visible '## {ac_id} evidence' block in the PR body: it was found only where a reviewer "
        f"cannot see it ({where}); blocks in comments or code are not evidence"
    )


def _check_ac(
    ac_id: str,
    blocks: Sequence[EvidenceBlock],
    bundles: Sequence[Bundle],
    integrity: dict[Path, list[str]],
    commit: str | None,
    gate: GateName | None,
    trust: TrustCheck | None = None,
) -> list[str]:
    """``integrity`` holds each bundle's verification, so ACs sharing a bundle read its files once."""
    if not blocks:
        return [f"no '## {ac_id} evidence' block in the PR body"]
    if len(blocks) > 1:
        lines = ", ".join(str(block.line) for block in blocks)
        return [f"{len(blocks)} evidence blocks in the PR body (lines {lines}); keep exactly one"]
    block = blocks[0]
    matching = [bundle for bundle in bundles if bundle.digest == block.bundle_sha256]
    if not matching:
        found = ", ".join(f"{b.run_id} ({b.digest[:12]}…)" for b in bundles)
        return [
            f"bundle-sha256 {block.bundle_sha256[:12]}… in the PR body (line {block.line}) matches no "
            f"--evidence bundle; found {found}: paste the evidence.md of the bundle the run wrote"
        ]
    bundle = matching[0]
    if bundle.path not in integrity:
        integrity[bundle.path] = verify_bundle(bundle)
    if integrity[bundle.path]:
        return [f"bundle {bundle.run_id}: {problem}" for problem in integrity[bundle.path]]
    entry = bundle.files.get(ac_file_name(ac_id))
    if entry is None:
        held = ", ".join(bundle.ac_ids()) or "no AC"
        return [f"bundle {bundle.run_id} has no record for {ac_id} (it holds {held})"]
    if entry.sha256 != block.ac_sha256:
        return [
            f"ac-sha256 {block.ac_sha256[:12]}… in the PR body does not match {ac_file_name(ac_id)} "
            f"in bundle {bundle.run_id} ({entry.sha256[:12]}…)"
        ]
    try:
        record = read_ac_record(bundle, ac_id)
    except BundleError as error:
        raise GateInputError(str(error)) from None
    recorded_id = _as_mapping(record.get("ac")).get("id")
    if recorded_id != ac_id:
        return [f"{ac_file_name(ac_id)} in bundle {bundle.run_id} is the record of {recorded_id}"]
    try:
        problems = _record_problems(record, commit, gate)
    except GateInputError as error:
        raise GateInputError(f"{bundle.path / ac_file_name(ac_id)}: {error}") from None
    return problems + ([] if trust is None else trust.problems(bundle, record, commit))


def _record_problems(record: Mapping[str, JsonValue], commit: str | None, gate: GateName | None) -> list[str]:
    problems: list[str] = []
    source = _as_mapping(record.get("source"))
    recorded_commit = source.get("commit")
    if commit is not None and not (isinstance(recorded_commit, str) and recorded_commit.startswith(commit)):
        problems.append(f"evidence is for commit {recorded_commit or 'unknown'}, not {commit}")
    waiver = record.get("waiver")
    if isinstance(waiver, Mapping):
        waiver_problem = _waiver_problem(waiver, gate)
        if waiver_problem is None:
            return problems
        problems.append(waiver_problem)
    if record.get("mode") == "diagnostic":
        problems.append("diagnostic run: --specgate-diagnostic evidence never qualifies")
    if record.get("outcome") != "passed":
        problems.append(f"outcome is {record.get('outcome')}, not passed")
    measurements = record.get("measurements")
    for row in measurements if isinstance(measurements, list) else []:
        miss = measurement_miss(_as_mapping(row))
        if miss is not None or not _as_mapping(row).get("passed"):
            problems.append(
                f"threshold missed: {_as_mapping(row).get('name')} = {_as_mapping(row).get('value')} "
                f"{miss or 'is marked failed'}"
            )
    if not record.get("qualifying"):
        reasons = record.get("not_qualifying_reasons")
        why = (
            "; ".join(str(r) for r in reasons)
            if isinstance(reasons, list) and reasons
            else "no reason recorded"
        )
        problems.append(f"not qualifying: {why}")
    return problems


def _waiver_problem(waiver: Mapping[str, JsonValue], gate: GateName | None) -> str | None:
    """None when the waiver defers this AC past the current gate; else why it does not."""
    target_text = str(waiver.get("to"))
    if gate is None:
        return f"waived → {target_text}, but no --gate was given to honour the waiver against"
    try:
        target = parse_gate_name(target_text)
        later = target.is_later_than(gate)
    except GateOrderError as error:
        raise GateInputError(f"waiver to {target_text!r} against --gate {gate.text!r}: {error}") from None
    except ValueError as error:
        raise GateInputError(f"waiver: {error}") from None
    if later:
        return None
    return f"waiver to {target.text} expired: this is gate {gate.text}, the AC must now pass on its own"
