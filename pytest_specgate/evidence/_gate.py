"""``specgate gate``: a PR body is accepted only if its evidence blocks are bound to intact bundles
for this exact commit whose records, judged again here under the verdict policy, pass and qualify.

The gate believes no verdict a bundle states: it recomputes each AC's verdict with
:func:`~pytest_specgate.evidence._policy.judge` and rejects a PR body whose visible verdict line
says otherwise. Problems with the evidence are *rejections* (exit 1, one line per problem, each
naming the AC). Inputs the gate cannot read at all are *bad input* (exit 2) and raise
:class:`GateInputError` naming the file or option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.contracts.acceptance import AC_ID_FORMS, is_ac_id
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.gates import (
    DeclaredGatesError,
    GateName,
    declared_gates,
    parse_gate_name,
    undeclared_gate_problem,
)
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._bundle import (
    MARKDOWN_NAME,
    Bundle,
    BundleError,
    ac_file_name,
    find_bundles,
    read_ac_record,
    read_records,
    verify_bundle,
)
from pytest_specgate.evidence._markdown import (
    EvidenceBlock,
    HiddenEvidence,
    PrBodyError,
    read_pr_body,
    render_markdown,
)
from pytest_specgate.evidence._policy import POLICY_VERSION, PolicyVerdict, judge
from pytest_specgate.evidence._trust import TrustCheck, TrustPolicy

GATE_RESULT_SCHEMA_ID = "specgate.gate-result/1"
_FULL_COMMIT = re.compile(r"^[0-9a-fA-F]{40}$")


class GateInputError(SpecgateInputError):
    """Input the gate cannot judge (exit 2)."""


@dataclass(frozen=True)
class CommitChoice:
    """The commit the evidence must be for, and where the gate took it from (printed)."""

    sha: str
    source: str


@dataclass(frozen=True)
class AcJudgement:
    """One AC at the gate: its recomputed verdict (None when no record was reached) and problems."""

    ac_id: str
    verdict: PolicyVerdict | None
    problems: tuple[str, ...]
    waived: bool = False

    @property
    def accepted(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class GateVerdict:
    commit: CommitChoice
    gate: str | None
    judgements: tuple[AcJudgement, ...]
    policy: str = POLICY_VERSION

    @property
    def accepted(self) -> tuple[str, ...]:
        return tuple(j.ac_id for j in self.judgements if j.accepted)

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{j.ac_id}: {problem}" for j in self.judgements for problem in j.problems)


def resolve_commit(option: str | None, environ: Mapping[str, str]) -> CommitChoice:
    """``--commit`` over ``$GITHUB_SHA``; either must be the full 40-hex commit."""
    if option is not None:
        text, source = option, "--commit"
    elif environ.get("GITHUB_SHA"):
        text, source = environ["GITHUB_SHA"], "$GITHUB_SHA"
    else:
        raise GateInputError(
            "no commit to check the evidence against: pass --commit=<40-hex sha> (or set $GITHUB_SHA)"
        )
    if not _FULL_COMMIT.match(text.strip()):
        raise GateInputError(
            f"{source} {text!r}: expected the full 40-hex commit; a prefix could match another commit"
        )
    return CommitChoice(sha=text.strip().lower(), source=source)


def read_declared_gates(pyproject: Path) -> tuple[GateName, ...]:
    """The ``[tool.specgate] gates`` of ``pyproject`` (empty when it declares none or does not exist)."""
    from pytest_specgate.contracts.hardware import RequirementError
    from pytest_specgate.selection.hardware import specgate_table

    try:
        table = specgate_table(pyproject)
        return declared_gates(table["gates"], str(pyproject)) if "gates" in table else ()
    except (RequirementError, DeclaredGatesError) as error:
        raise GateInputError(str(error)) from None


def resolve_gate(gate: str | None, declared: tuple[GateName, ...], pyproject: Path) -> GateName | None:
    """``--gate`` must name one of the project's declared merge gates."""
    if gate is None:
        return None
    try:
        name = parse_gate_name(gate)
    except ValueError as error:
        raise GateInputError(f"--gate: {error}") from None
    problem = undeclared_gate_problem(name.text, declared, str(pyproject))
    if problem is not None:
        raise GateInputError(f"--gate: {problem}")
    return name


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


@dataclass(frozen=True)
class PrBodyText:
    """A PR body already read (from stdin or a GitHub event); ``source`` names it in messages."""

    text: str
    source: str


def evaluate_gate(
    pr_body: Path | PrBodyText,
    evidence_dirs: Sequence[Path],
    required: Sequence[str],
    commit: CommitChoice,
    gate: GateName | None = None,
    declared: tuple[GateName, ...] = (),
    trust_policy: TrustPolicy | None = None,
) -> GateVerdict:
    """Judge a PR body against bundles; see the module docstring for exit semantics.

    With a ``trust_policy`` every AC must also be vouched for by an enrolled signer.
    """
    for ac_id in required:
        if not is_ac_id(ac_id):
            raise GateInputError(f"--require {ac_id!r}: an AC id looks like {AC_ID_FORMS}")
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
    integrity: dict[Path, list[str]] = {}
    trust = None if trust_policy is None else TrustCheck(trust_policy)
    judgements = []
    for ac_id in acs:
        ac_blocks = [b for b in blocks if b.ac_id == ac_id]
        if not ac_blocks and body.hidden_for(ac_id):
            judgements.append(AcJudgement(ac_id, None, (_hidden_only(ac_id, body.hidden_for(ac_id)),)))
            continue
        judgements.append(_judge_ac(ac_id, ac_blocks, bundles, integrity, commit, gate, declared, trust))
    return GateVerdict(commit=commit, gate=None if gate is None else gate.text, judgements=tuple(judgements))


def _hidden_only(ac_id: str, hidden: Sequence[HiddenEvidence]) -> str:
    where = hidden[0].describe()
    return (
        f"no visible '## {ac_id} evidence' block in the PR body: it was found only where a reviewer "
        f"cannot see it ({where}); blocks in comments or code are not evidence"
    )


def bundle_problems(bundle: Bundle) -> list[str]:
    """Files against the manifest, then ``evidence.md`` against the records it must render from."""
    problems = verify_bundle(bundle)
    if problems:
        return problems
    try:
        records = read_records(bundle)
    except BundleError as error:
        raise GateInputError(str(error)) from None
    expected = render_markdown(
        [(records[ac], judge(records[ac]), bundle.files[ac_file_name(ac)].sha256) for ac in sorted(records)],
        bundle.digest,
    )
    markdown = bundle.path / MARKDOWN_NAME
    if not markdown.is_file() or markdown.read_text("utf-8") != expected:
        return [f"{MARKDOWN_NAME} is not what its records render (edited after writing)"]
    return []


def _judge_ac(
    ac_id: str,
    blocks: Sequence[EvidenceBlock],
    bundles: Sequence[Bundle],
    integrity: dict[Path, list[str]],
    commit: CommitChoice,
    gate: GateName | None,
    declared: tuple[GateName, ...],
    trust: TrustCheck | None = None,
) -> AcJudgement:
    """``integrity`` holds each bundle's verification, so ACs sharing a bundle read its files once."""
    found = _bound_record(ac_id, blocks, bundles, integrity)
    if isinstance(found, list):
        return AcJudgement(ac_id, None, tuple(found))
    bundle, record, block = found
    verdict = judge(record)
    problems = _binding_problems(record, verdict, block, bundle, commit)
    if trust is not None:
        problems += trust.problems(bundle, record.document, commit.sha)
    if verdict.waiver is not None:
        waiver_problem = _waiver_problem(verdict.waiver.to, gate, declared)
        if waiver_problem is None:
            return AcJudgement(ac_id, verdict, tuple(problems), waived=True)
        problems.append(waiver_problem)
    if verdict.outcome != "passed":
        problems.append(f"outcome is {verdict.outcome}, not passed")
    if not verdict.qualifying:
        problems.append(f"not qualifying under {verdict.policy}: {'; '.join(verdict.reasons)}")
    return AcJudgement(ac_id, verdict, tuple(problems))


def _bound_record(
    ac_id: str, blocks: Sequence[EvidenceBlock], bundles: Sequence[Bundle], integrity: dict[Path, list[str]]
) -> list[str] | tuple[Bundle, AcRecord, EvidenceBlock]:
    """The intact record the PR body's block binds, or why there is none."""
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
        integrity[bundle.path] = bundle_problems(bundle)
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
    if record.ac.id != ac_id:
        return [f"{ac_file_name(ac_id)} in bundle {bundle.run_id} is the record of {record.ac.id}"]
    return bundle, record, block


def _binding_problems(
    record: AcRecord, verdict: PolicyVerdict, block: EvidenceBlock, bundle: Bundle, commit: CommitChoice
) -> list[str]:
    """Commit, the visible verdict, the record's own claims and its attachments, against the facts."""
    problems = []
    if record.source.commit != commit.sha:
        problems.append(f"evidence is for commit {record.source.commit or 'unknown'}, not {commit.sha}")
    if block.verdict_text is None:
        problems.append(f"block at PR body line {block.line} has no visible '**Verdict: …**' line")
    elif block.verdict_text != verdict.label:
        problems.append(
            f"visible verdict '{block.verdict_text}' (PR body line {block.verdict_line}) disagrees with the "
            f"verdict {verdict.policy} recomputes: '{verdict.label}'"
        )
    if (record.outcome, record.qualifying) != (verdict.outcome, verdict.qualifying):
        claimed = f"{record.outcome.upper()} · {'QUALIFYING' if record.qualifying else 'NOT QUALIFYING'}"
        problems.append(
            f"{ac_file_name(record.ac.id)} claims '{claimed}' but {verdict.policy} recomputes "
            f"'{verdict.label}' from its facts"
        )
    problems += [
        f"attachment {row.path} is recorded as stored but is not in bundle {bundle.run_id}"
        for row in record.attachments
        if row.stored and row.path not in bundle.files
    ]
    return problems


def _waiver_problem(target: str, gate: GateName | None, declared: tuple[GateName, ...]) -> str | None:
    """None when the waiver defers this AC past the current (declared) gate; else why it does not."""
    if gate is None:
        return f"waived → {target}, but no --gate was given to honour the waiver against"
    undeclared = undeclared_gate_problem(target, declared, "the project")
    if undeclared is not None:
        return f"waiver does not count: {undeclared}"
    if parse_gate_name(target).is_later_than(gate):
        return None
    return f"waiver to {target} expired: this is gate {gate.text}, the AC must now pass on its own"


def gate_result_json(verdict: GateVerdict) -> dict[str, JsonValue]:
    """``specgate gate --json``: the versioned shape documented in docs/gate.md."""
    return {
        "schema": GATE_RESULT_SCHEMA_ID,
        "policy": verdict.policy,
        "commit": verdict.commit.sha,
        "commit_source": verdict.commit.source,
        "gate": verdict.gate,
        "accepted": not verdict.problems,
        "acs": [
            {
                "ac": judgement.ac_id,
                "accepted": judgement.accepted,
                "waived": judgement.waived,
                "outcome": None if judgement.verdict is None else judgement.verdict.outcome,
                "qualifying": None if judgement.verdict is None else judgement.verdict.qualifying,
                "reasons": [] if judgement.verdict is None else list(judgement.verdict.reasons),
                "problems": list(judgement.problems),
            }
            for judgement in verdict.judgements
        ],
    }


def _summary_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def gate_summary_markdown(verdict: GateVerdict) -> str:
    """The table appended to ``$GITHUB_STEP_SUMMARY``: one row per AC, as in ``--json``."""
    lines = [
        f"### specgate gate: {'accepted' if not verdict.problems else 'rejected'}",
        "",
        f"Policy {verdict.policy}; commit {verdict.commit.sha} (from {verdict.commit.source}); "
        f"gate {verdict.gate or 'none'}",
        "",
        "| AC | verdict | gate | problems |",
        "|---|---|---|---|",
    ]
    for judgement in verdict.judgements:
        label = "—" if judgement.verdict is None else judgement.verdict.label
        state = "waived" if judgement.waived else "accepted" if judgement.accepted else "REJECTED"
        problems = _summary_cell("; ".join(judgement.problems)) or "—"
        lines.append(f"| {judgement.ac_id} | {label} | {state} | {problems} |")
    return "\n".join(lines) + "\n"
