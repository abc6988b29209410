"""``specgate gate``: a PR body is accepted only if its evidence blocks are bound to intact bundles
for this exact commit whose records, judged again here under the verdict policy, pass and qualify.

The gate believes no verdict a bundle states: it recomputes each AC's verdict with
:func:`~pytest_specgate.evidence._policy.judge`, re-renders the AC's block from the bound record
and rejects a PR body block that shows a reviewer anything else, line by line. What decides
(profiles, gates, signers, engine-free ACs) comes from a :class:`TrustedConfig`, never from the
PR's checkout. Problems with the evidence are *rejections* (exit 1, one line per problem, each
naming the AC). Inputs the gate cannot read at all are *bad input* (exit 2) and raise
:class:`GateInputError` naming the file or option.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_specgate.contracts.acceptance import AC_ID_FORMS, is_ac_id
from pytest_specgate.contracts.census import PYTEST_CONFIG_NAMES, uncovered_spec_paths
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.gates import GateName, parse_gate_name, undeclared_gate_problem
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.safe_read import read_regular_file
from pytest_specgate.contracts.validation import decode_utf8, shown_on_one_line
from pytest_specgate.evidence._ac_definitions import ac_definition_problems
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._base_members import BaseMembership, base_membership, membership_problems
from pytest_specgate.evidence._bundle import (
    MARKDOWN_NAME,
    Bundle,
    BundleError,
    find_bundles,
    read_bundle_bytes,
    read_records,
    verify_bundle,
)
from pytest_specgate.evidence._markdown import (
    EvidenceBlock,
    HiddenEvidence,
    PrBodyError,
    grouped_reasons,
    joined_markdown,
    markdown_layout,
    read_pr_body,
    render_parts,
)
from pytest_specgate.evidence._policy import POLICY_VERSION, PolicyVerdict, judge
from pytest_specgate.evidence._run_provenance import unenrolled_backends, used_backends
from pytest_specgate.evidence._trust import NO_PROFILES, TrustCheck, profile_needs
from pytest_specgate.evidence._trusted import UNTRUSTED, TrustedConfig

GATE_RESULT_SCHEMA_ID = "specgate.gate-result/2"
_FULL_COMMIT = re.compile(r"^[0-9a-fA-F]{40}$")
PROJECT_CONFIG_FILES = frozenset({*PYTEST_CONFIG_NAMES, "setup.py"})
"""pytest's configuration files at the repository root, and ``setup.py``, which installing the
project runs before pytest starts (it could rewrite an installed file and its RECORD line together):
harness for every AC when they change or appear (a new ``.pytest.ini`` or ``pytest.toml`` takes over
from ``pyproject.toml``; the root conftest.py is harness already, as a conftest above every spec)."""
GIT_TIMEOUT_S = 30.0


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
    harness_changed: tuple[str, ...] | None = None
    """Harness files (every repository file the run imported or collected, the AC's spec files,
    conftests above them, files beside them, the project's pytest configuration) that differ
    between the trusted base commit and the record's commit, less those the trusted ``sut_paths``
    name; each blocks the AC. None when no base ref was given or no record was reached."""
    sut_changed: tuple[str, ...] = ()
    """Harness files that differ but that the trusted config names as in-process code under test."""
    not_qualifying: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The policy's reasons grouped as the evidence block groups them (each ``why`` once, with the
    tests that gave it): how the gate's lines show the ``not qualifying under`` problem."""
    record: AcRecord | None = None
    """The bound record that was judged (None when none was reached)."""
    worded_from_record: frozenset[str] = frozenset()
    """The problems worded from ``record``, the trusted config and specgate's own words alone (the
    verdict's outcome and reasons, what the AC's trusted definition finds): no PR body text, path,
    signature or git message in them, so a command that found those strings clean may print them
    without reading them again."""

    @property
    def accepted(self) -> bool:
        return not self.problems

    @property
    def not_qualifying_problem(self) -> str | None:
        """The one problem that joins the policy's reasons (``not qualifying under POLICY: ...``)."""
        if self.verdict is None or self.verdict.qualifying or not self.not_qualifying:
            return None
        return f"not qualifying under {self.verdict.policy}: {'; '.join(self.verdict.reasons)}"


@dataclass(frozen=True)
class SignatureRule:
    """Whether a missing trust policy rejects (under CI or ``--require-signatures``) or was
    explicitly allowed (``--allow-unsigned``); both are printed with the result."""

    required: bool = False
    allow_unsigned: bool = False


@dataclass(frozen=True)
class GateVerdict:
    commit: CommitChoice
    gate: str | None
    judgements: tuple[AcJudgement, ...]
    trusted: str = UNTRUSTED.source
    signatures: str = "not checked"
    run_problems: tuple[str, ...] = ()
    base_commit: str | None = None
    policy: str = POLICY_VERSION

    @property
    def accepted(self) -> tuple[str, ...]:
        return tuple(j.ac_id for j in self.judgements if j.accepted) if not self.run_problems else ()

    @property
    def problems(self) -> tuple[str, ...]:
        return self.run_problems + tuple(
            f"{j.ac_id}: {problem}" for j in self.judgements for problem in j.problems
        )


AUTHORITATIVE = (
    "this result is the authoritative account of the evidence: the gate checked each block's heading "
    "and lines against its bound record; prose, other headings and anything else in the PR body were "
    "not checked"
)
"""Printed with every judged result and at the top of the step summary: what a reviewer reads in
the PR body outside the checked blocks is the author's, only this is the gate's."""


PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})


def resolve_commit(option: str | None, environ: Mapping[str, str],
                   checkout: Path | None = None) -> CommitChoice:
    """``--commit``, else in GitHub Actions the commit the event is about, else (a release manager
    at their desk) ``HEAD`` of ``checkout``; the full 40-hex commit.

    On ``pull_request`` events ``$GITHUB_SHA`` is the merge commit GitHub made, which no run
    recorded: the PR's head is ``pull_request.head.sha`` in ``$GITHUB_EVENT_PATH``. Inside
    Actions HEAD is never guessed: there it may be that merge commit.
    """
    event = environ.get("GITHUB_EVENT_NAME", "")
    if option is not None:
        text, source = option, "--commit"
    elif event in PULL_REQUEST_EVENTS:
        text, source = _pull_request_head(event, environ.get("GITHUB_EVENT_PATH", ""))
    elif environ.get("GITHUB_SHA"):
        what = "the pushed commit" if event == "push" else f"the commit of the {event} event" if event else ""
        text, source = environ["GITHUB_SHA"], f"$GITHUB_SHA, {what}" if what else "$GITHUB_SHA"
    elif not environ.get("GITHUB_ACTIONS") and checkout is not None and (head := _head(checkout)):
        text, source = head, f"HEAD of {checkout} (outside GitHub Actions)"
    else:
        raise GateInputError(
            "no commit to check the evidence against: pass --commit=<40-hex sha> (or set $GITHUB_SHA; "
            "outside GitHub Actions the gate takes HEAD of a git checkout in the current directory)"
        )
    if not _FULL_COMMIT.match(text.strip()):
        raise GateInputError(
            f"{source} {text!r}: expected the full 40-hex commit; a prefix could match another commit"
        )
    return CommitChoice(sha=text.strip().lower(), source=source)


def _head(checkout: Path) -> str | None:
    import subprocess

    try:
        completed = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--verify", "HEAD^{commit}"],
                                   capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


def _pull_request_head(event: str, location: str) -> tuple[str, str]:
    """``pull_request.head.sha`` of the event file; fail closed rather than gate the merge commit."""
    import json

    source = f"pull_request.head.sha in $GITHUB_EVENT_PATH ({event} event; $GITHUB_SHA is the merge commit)"
    if not location:
        raise GateInputError(f"{event} event without $GITHUB_EVENT_PATH: pass --commit=<the PR head sha>")
    try:
        payload = json.loads(read_text_input(Path(location), "GitHub event payload"))
        head = payload["pull_request"]["head"]["sha"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise GateInputError(
            f"{location}: no pull_request.head.sha in the {event} event payload: "
            "pass --commit=<the PR head sha>"
        ) from None
    return str(head), source


def resolve_gate(gate: str | None, trusted: TrustedConfig) -> GateName | None:
    """``--gate`` must name one of the merge gates the trusted config declares."""
    if gate is None:
        return None
    try:
        name = parse_gate_name(gate)
    except ValueError as error:
        raise GateInputError(f"--gate: {error}") from None
    problem = undeclared_gate_problem(name.text, trusted.gates, trusted.source)
    if problem is not None:
        raise GateInputError(f"--gate: {problem}")
    return name


def read_text_input(path: Path, what: str) -> str:
    """A UTF-8 text file through the safe reader (a regular file of bounded size)."""
    try:
        return decode_utf8(read_regular_file(path, what), str(path))
    except SpecgateInputError as error:
        raise GateInputError(str(error)) from None


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
    trusted: TrustedConfig = UNTRUSTED,
    signatures: SignatureRule = SignatureRule(),
    now: dt.datetime | None = None,
    repo: Path | None = None,
) -> GateVerdict:
    """Judge a PR body against bundles under ``trusted``; see the module docstring for exit semantics.

    With a trust policy every AC must also be vouched for by an enrolled, unexpired signer (keys'
    ``expires`` are read against ``now``). ``repo`` is where ``git diff`` lists the harness files
    changed since ``trusted.base_commit`` (default: the working directory).
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
    context = _AcContext(
        bundles=bundles,
        commit=commit,
        gate=gate,
        trusted=trusted,
        trust=None if trusted.trust is None else TrustCheck(trusted.trust, now or dt.datetime.now(dt.UTC)),
        repo=repo or Path.cwd(),
    )
    blocks_by_ac: dict[str, list[EvidenceBlock]] = {}
    for block in blocks:
        blocks_by_ac.setdefault(block.ac_id, []).append(block)
    judgements = []
    for ac_id in acs:
        ac_blocks = blocks_by_ac.get(ac_id, [])
        if not ac_blocks and body.hidden_for(ac_id):
            judgements.append(AcJudgement(ac_id, None, (_hidden_only(ac_id, body.hidden_for(ac_id)),)))
            continue
        judgements.append(_judge_ac(ac_id, ac_blocks, context))
    described, run_problems = _signature_state(trusted, signatures)
    return GateVerdict(
        commit=commit,
        gate=None if gate is None else gate.text,
        judgements=tuple(judgements),
        trusted=trusted.source,
        signatures=described,
        run_problems=run_problems,
        base_commit=trusted.base_commit,
    )


def _signature_state(trusted: TrustedConfig, rule: SignatureRule) -> tuple[str, tuple[str, ...]]:
    """What the result says about signatures, and the rejection a missing policy is where required."""
    if trusted.trust is not None:
        signers = len(trusted.trust.signers)
        return f"checked under the trust policy of {trusted.source} ({signers} signers)", ()
    if rule.allow_unsigned:
        return f"NOT checked (--allow-unsigned): no trust policy in {trusted.source}", ()
    if rule.required:
        return "required, but there is no trust policy", (
            f"trust policy: none in {trusted.source}, and signatures are required (under CI, or "
            "--require-signatures): enrol signers in the base branch's [tool.specgate.trust], or pass "
            "--allow-unsigned to accept unsigned evidence",
        )
    return f"not checked: no trust policy in {trusted.source}", ()


@dataclass
class _AcContext:
    """What every AC of one gate run is judged against; ``integrity`` and ``diffs`` are filled as
    ACs are judged, so ACs sharing a bundle or a commit read its files and its diff once."""

    bundles: Sequence[Bundle]
    commit: CommitChoice
    gate: GateName | None
    trusted: TrustedConfig
    trust: TrustCheck | None
    repo: Path
    integrity: dict[Path, _CheckedBundle] = field(default_factory=dict)
    diffs: dict[str, tuple[str, ...] | str] = field(default_factory=dict)
    membership: BaseMembership | None = None

    def base_membership(self, base_commit: str) -> BaseMembership:
        """The census of the trusted commit, taken once per gate run."""
        if self.membership is None:
            self.membership = base_membership(self.repo, base_commit, self.trusted.spec_paths or (".",))
        return self.membership


def _hidden_only(ac_id: str, hidden: Sequence[HiddenEvidence]) -> str:
    where = hidden[0].describe()
    return (
        f"no visible '## {ac_id} evidence' block in the PR body: it was found only where a reviewer "
        f"cannot see it ({where}); blocks in comments or code are not evidence"
    )


@dataclass(frozen=True)
class _CheckedBundle:
    """What checking a bundle found: its problems, and each AC's recomputed verdict and block as
    rendered for ``evidence.md``, in its layout (the gate compares a pasted block with that same
    rendering)."""

    problems: list[str]
    judged: Mapping[str, tuple[AcRecord, PolicyVerdict, str]] = field(default_factory=dict)


def bundle_problems(bundle: Bundle) -> list[str]:
    """Files against the manifest, then ``evidence.md`` against the records it must render from."""
    return _checked_bundle(bundle).problems


def _checked_bundle(bundle: Bundle) -> _CheckedBundle:
    problems = verify_bundle(bundle)
    if problems:
        return _CheckedBundle(problems)
    try:
        records = read_records(bundle)
    except BundleError as error:
        raise GateInputError(str(error)) from None
    judged = [(records[ac], judge(records[ac]), _bound_sha256(bundle, ac)) for ac in sorted(records)]
    try:
        markdown = read_bundle_bytes(bundle.path / MARKDOWN_NAME)
    except BundleError as error:
        return _CheckedBundle([str(error)])
    # The layout the file says it is in is rendered, and only exactly that is accepted: a bundle
    # written in layout 1 (signed, or pasted already) still verifies; pasted blocks must be in it.
    summary, blocks = render_parts(judged, bundle.digest, layout=markdown_layout(markdown))
    if markdown != joined_markdown(summary, blocks).encode():
        return _CheckedBundle([f"{MARKDOWN_NAME} is not what its records render (edited after writing)"])
    return _CheckedBundle([], {
        ac_id: (record, verdict, block)
        for ac_id, (record, verdict, _), block in zip(sorted(records), judged, blocks, strict=True)
    })


def _bound_sha256(bundle: Bundle, ac_id: str) -> str:
    """The manifest's digest of a record :func:`read_records` found (so the manifest lists it)."""
    entry = bundle.record_entry(ac_id)
    if entry is None:
        raise GateInputError(f"{bundle.path}: the manifest lists no record of {ac_id}")
    return entry.sha256


def _judge_ac(ac_id: str, blocks: Sequence[EvidenceBlock], context: _AcContext) -> AcJudgement:
    found = _bound_record(ac_id, blocks, context.bundles, context.integrity)
    if isinstance(found, list):
        return AcJudgement(ac_id, None, tuple(found))
    bundle, record, block = found
    _, verdict, rendered = context.integrity[bundle.path].judged[ac_id]
    trusted = context.trusted
    problems = _binding_problems(record, verdict, block, rendered, bundle, context.commit)
    settings = trusted.acs.get(ac_id)
    # A waived AC was not run where its profile is: the signer vouches for the skip it records.
    pinned = None if settings is None or verdict.waiver is not None else settings.profile
    needs = profile_needs(record, trusted.hosts, pinned) if trusted.hosts or trusted.trust else NO_PROFILES
    problems += needs.problems
    if context.trust is not None:
        problems += context.trust.problems(bundle, record, needs, context.commit.sha)
    harness: tuple[str, ...] | None = None
    sut: tuple[str, ...] = ()
    if trusted.base_commit is not None:
        changed = _harness_changes(record, trusted.base_commit, context)
        sut = tuple(path for path in changed if is_code_under_test(path, record, trusted))
        harness = tuple(path for path in changed if path not in sut)
        problems += harness_problems(record, harness, trusted.base_commit)
        problems += membership_problems(record, context.base_membership(trusted.base_commit))
    if verdict.waiver is not None:
        waiver_problem = _waiver_problem(verdict.waiver.to, context.gate, trusted)
        if waiver_problem is None:
            return AcJudgement(ac_id, verdict, tuple(problems), waived=True, harness_changed=harness,
                               sut_changed=sut, record=record)
        problems.append(waiver_problem)
    worded: list[str] = []
    if verdict.outcome != "passed":
        worded.append(f"outcome is {verdict.outcome}, not passed")
    grouped: tuple[tuple[str, tuple[str, ...]], ...] = ()
    if not verdict.qualifying:
        worded.append(f"not qualifying under {verdict.policy}: {'; '.join(verdict.reasons)}")
        grouped = tuple(grouped_reasons(record, verdict.reasons))
    engine = ac_definition_problems(record, trusted)
    engine += unenrolled_backends(used_backends(record.document), trusted.backends)
    if trusted.spec_paths is not None:
        engine += census_scope_reasons(record.document, trusted.spec_paths)
    worded += [f"not qualifying under the trusted config ({trusted.source}): {reason}" for reason in engine]
    return AcJudgement(ac_id, verdict, (*problems, *worded), harness_changed=harness, sut_changed=sut,
                       not_qualifying=grouped, record=record, worded_from_record=frozenset(worded))


def census_scope_reasons(document: Mapping[str, object], spec_paths: Sequence[str]) -> list[str]:
    """Why a record's census cannot show the AC whole: it collected fewer paths than the trusted
    spec paths (a PR that narrows its own ``spec_paths`` or ``testpaths`` hides the AC's other
    tests from the census). A record without a census is the judge's to refuse."""
    completeness = document.get("completeness")
    collection = completeness.get("collection") if isinstance(completeness, Mapping) else None
    if not isinstance(collection, Mapping) or not isinstance(collection.get("testpaths"), list):
        return []
    collected = [str(path) for path in collection["testpaths"]]
    missing = uncovered_spec_paths(collected, spec_paths)
    if not missing:
        return []
    return [f"the run's census collected {', '.join(collected) or 'nothing'}, not the trusted spec paths "
            f"{', '.join(missing)}: tests of the AC there were never looked for"]


def _bound_record(
    ac_id: str, blocks: Sequence[EvidenceBlock], bundles: Sequence[Bundle],
    integrity: dict[Path, _CheckedBundle],
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
        integrity[bundle.path] = _checked_bundle(bundle)
    if integrity[bundle.path].problems:
        return [f"bundle {bundle.run_id}: {problem}" for problem in integrity[bundle.path].problems]
    entry = bundle.record_entry(ac_id)
    if entry is None:
        held = ", ".join(bundle.ac_ids()) or "no AC"
        return [f"bundle {bundle.run_id} has no record for {ac_id} (it holds {held})"]
    if entry.sha256 != block.ac_sha256:
        return [
            f"ac-sha256 {block.ac_sha256[:12]}… in the PR body does not match {bundle.record_name(ac_id)} "
            f"in bundle {bundle.run_id} ({entry.sha256[:12]}…)"
        ]
    record, _, _ = integrity[bundle.path].judged[ac_id]
    if record.ac.id != ac_id:
        return [f"{bundle.record_name(ac_id)} in bundle {bundle.run_id} is the record of {record.ac.id}"]
    return bundle, record, block


def _binding_problems(
    record: AcRecord, verdict: PolicyVerdict, block: EvidenceBlock, expected: str, bundle: Bundle,
    commit: CommitChoice,
) -> list[str]:
    """Commit, what the block shows (``expected``: the block its record renders, under ``verdict``),
    the record's own claims and its attachments, against the facts."""
    problems = []
    if record.source.commit != commit.sha:
        problems.append(f"evidence is for commit {record.source.commit or 'unknown'}, not {commit.sha}")
    for difference in (heading_difference(block), block_difference(block, expected)):
        if difference is not None:
            problems.append(difference)
    if (record.outcome, record.qualifying) != (verdict.outcome, verdict.qualifying):
        claimed = f"{record.outcome.upper()} · {'QUALIFYING' if record.qualifying else 'NOT QUALIFYING'}"
        problems.append(
            f"{bundle.record_name(record.ac.id)} claims '{claimed}' but {verdict.policy} recomputes "
            f"'{verdict.label}' from its facts"
        )
    problems += [
        f"attachment {row.path} is recorded as stored but is not in bundle {bundle.run_id}"
        for row in record.attachments
        if row.stored and row.path not in bundle.files
    ]
    return problems


def _normalised(text: str) -> str:
    return " ".join(text.split())


def heading_difference(block: EvidenceBlock) -> str | None:
    """Why a block's heading is not exactly ``## AC-N evidence``: any other word there would be a
    claim the gate never checks, shown to the reviewer in the largest type of the block."""
    wanted = f"## {block.ac_id} evidence"
    if _normalised(block.heading) == wanted:
        return None
    return (f"the block heading at PR body line {block.line} is {block.heading!r}; a block heading is "
            f"exactly {wanted!r}: words there are never checked, so none are allowed")


def block_difference(block: EvidenceBlock, expected: str) -> str | None:
    """The first visible line where the PR body's block differs from ``expected`` (the block
    re-rendered from the bound record), else None.

    Lines are compared after the heading (checked on its own, :func:`heading_difference`), with
    whitespace runs collapsed and blank lines dropped, so the comparison holds whatever the
    renderer's layout is.
    """
    rendered = expected.split("\n")
    heading = next((index for index, line in enumerate(rendered) if line.lstrip().startswith("#")), -1)
    # A block pasted as written shows the very lines rendered: equal lines are equal once
    # whitespace is collapsed, and a line is dropped as blank on both sides alike (split() and
    # strip() know the same whitespace), so only a block that differs is normalised line by line.
    shown_as_is = [text for _, text in block.body if text.strip()]
    if shown_as_is == [line for line in rendered[heading + 1 :] if line.strip()]:
        return None
    wanted = [line for line in map(_normalised, rendered[heading + 1 :]) if line]
    shown = [(number, line) for number, text in block.body if (line := _normalised(text))]
    for index in range(max(len(wanted), len(shown))):
        want = wanted[index] if index < len(wanted) else None
        have = shown[index] if index < len(shown) else None
        if have is not None and want == have[1]:
            continue
        if have is None:
            return (
                f"the block at PR body line {block.line} does not show what was judged: it ends before "
                f"the line {want!r} its record renders"
            )
        expected_text = "the end of the block" if want is None else repr(want)
        return (
            f"the block does not show what was judged: PR body line {have[0]}: expected {expected_text}, "
            f"found {have[1]!r}"
        )
    return None


def harness_problems(record: AcRecord, harness: Sequence[str], base: str) -> list[str]:
    """A changed harness file blocks the AC: its figures came from code the base never ran."""
    if record.source.imported_files is None:
        return [f"the record does not list the repository files the run imported, so whether "
                f"{record.ac.id}'s harness is the trusted commit's ({base[:12]}) is unknown"]
    return [f"harness file {path} differs from the trusted commit {base[:12]} and this run imported or "
            f"collected it: land the harness change first (or name it in the trusted [tool.specgate] "
            "sut_paths if it is in-process code under test)"
            for path in harness]


def is_code_under_test(path: str, record: AcRecord, trusted: TrustedConfig) -> bool:
    """Whether the trusted ``sut_paths`` exempt a changed harness file: never the AC's own spec
    files, a conftest.py or the root's pytest configuration, whatever a broad glob matches."""
    where = PurePosixPath(path)
    return (trusted.is_sut(path)
            and path not in {test.nodeid.split("::", 1)[0] for test in record.tests}
            and where.name != "conftest.py"
            and not (where.parent == PurePosixPath(".") and where.name in PROJECT_CONFIG_FILES))


def harness_paths(record: AcRecord, changed: Sequence[str]) -> tuple[str, ...]:
    """Which ``changed`` paths are harness for ``record``'s AC: every repository file the run
    imported or collected (``source.imported_files``), its spec files, any conftest.py at or above
    their folders, other files in those folders (helpers, data), and the project's pytest
    configuration at the root. Paths are repository-relative, as nodeids are rootdir-relative."""
    imported = set(record.source.imported_files or ())
    specs = {PurePosixPath(test.nodeid.split("::", 1)[0]) for test in record.tests}
    folders = {spec.parent for spec in specs}
    above = {ancestor for folder in folders for ancestor in (folder, *folder.parents)}
    found = []
    for text in changed:
        path = PurePosixPath(text)
        if (
            text in imported
            or path in specs
            or path.parent in folders
            or (path.name == "conftest.py" and path.parent in above)
            or (path.parent == PurePosixPath(".") and path.name in PROJECT_CONFIG_FILES)
        ):
            found.append(text)
    return tuple(found)


def _harness_changes(record: AcRecord, base: str, context: _AcContext) -> tuple[str, ...]:
    head = record.source.commit
    if head is None:
        return ("(the record names no commit to compare with the base)",)
    if head not in context.diffs:
        context.diffs[head] = changed_between(base, head, context.repo)
    changed = context.diffs[head]
    if isinstance(changed, str):
        return (f"(cannot compare with the base: {changed})",)
    return harness_paths(record, changed)


def changed_between(base: str, head: str, repo: Path) -> tuple[str, ...] | str:
    """Paths that differ between two commits (``git diff --name-only``), or why git could not say."""
    argv = ["git", "diff", "--name-only", "-z", "--no-renames", "--end-of-options", base, head, "--"]
    try:
        completed = subprocess.run(argv, cwd=repo, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot run git: {error}"
    if completed.returncode != 0:
        said = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        return said[-1] if said else f"git diff exited {completed.returncode}"
    return tuple(name for name in completed.stdout.decode("utf-8", "replace").split("\0") if name)


def _waiver_problem(target: str, gate: GateName | None, trusted: TrustedConfig) -> str | None:
    """None when the waiver defers this AC past the current gate, both declared by the trusted
    config (a gate the PR declares for itself counts for nothing); else why it does not."""
    if gate is None:
        return f"waived → {target}, but no --gate was given to honour the waiver against"
    undeclared = undeclared_gate_problem(target, trusted.gates, trusted.source)
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
        "trusted_config": verdict.trusted,
        "base_commit": verdict.base_commit,
        "signatures": verdict.signatures,
        "accepted": not verdict.problems,
        "problems": list(verdict.run_problems),
        "acs": [
            {
                "ac": judgement.ac_id,
                "accepted": judgement.accepted,
                "waived": judgement.waived,
                "outcome": None if judgement.verdict is None else judgement.verdict.outcome,
                "qualifying": None if judgement.verdict is None else judgement.verdict.qualifying,
                "reasons": [] if judgement.verdict is None else list(judgement.verdict.reasons),
                "problems": list(judgement.problems),
                "harness_changed": None
                if judgement.harness_changed is None
                else list(judgement.harness_changed),
                "sut_changed": list(judgement.sut_changed),
            }
            for judgement in verdict.judgements
        ],
    }


def not_qualifying_lines(judgement: AcJudgement) -> list[str]:
    """One problem per reason the policy gives, each once, as the evidence block groups them:
    ``not qualifying under POLICY: WHY (test TEST)`` for one test, ``WHY (N tests: ...)`` for a
    reason several tests gave, ``WHY`` for one about the whole AC; not one joined line. A test's
    node id follows its reason, never stands before it as a key (``test_password: <name> = …``
    reads as a credential assignment)."""
    assert judgement.verdict is not None
    prefix = f"not qualifying under {judgement.verdict.policy}: "
    lines = []
    for why, tests in judgement.not_qualifying:
        if len(tests) == 1:
            lines.append(f"{prefix}{why} (test {tests[0]})")
        else:
            named = f" ({len(tests)} tests: {', '.join(tests)})" if tests else ""
            lines.append(f"{prefix}{why}{named}")
    return lines


def _summary_cell(text: str) -> str:
    """One table cell: a line break read as a space, ``|`` escaped, and every other character
    that could end the row (``\\r``, ``\\u2028``...) shown as its escape."""
    return shown_on_one_line(text.replace("\n", " ")).replace("|", "\\|")


def gate_summary_markdown(verdict: GateVerdict) -> str:
    """The table appended to ``$GITHUB_STEP_SUMMARY``: one row per AC, as in ``--json``."""
    lines = [
        f"### specgate gate: {'accepted' if not verdict.problems else 'rejected'}",
        "",
        f"Policy {verdict.policy}; commit {verdict.commit.sha} (from {verdict.commit.source}); "
        f"gate {verdict.gate or 'none'}",
        "",
        f"Trusted config {_summary_cell(verdict.trusted)}; signatures {_summary_cell(verdict.signatures)}",
        "",
        f"**{AUTHORITATIVE[0].upper()}{AUTHORITATIVE[1:]}.**",
        "",
        *(f"- {_summary_cell(problem)}" for problem in verdict.run_problems),
        "| AC | verdict | gate | problems |",
        "|---|---|---|---|",
    ]
    for judgement in verdict.judgements:
        label = "—" if judgement.verdict is None else judgement.verdict.label
        state = "waived" if judgement.waived else "accepted" if judgement.accepted else "REJECTED"
        shown = [line for problem in judgement.problems
                 for line in (not_qualifying_lines(judgement) if problem == judgement.not_qualifying_problem
                              else [problem])]
        problems = _summary_cell("; ".join(shown)) or "—"
        lines.append(f"| {judgement.ac_id} | {label} | {state} | {problems} |")
    return "\n".join(lines) + "\n"
