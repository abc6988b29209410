"""The verdict policy: whether an AC record's evidence qualifies, derived only from its facts.

A bundle is written by whoever wants the merge, so the ``qualifying`` flag and reasons a record
carries are a courtesy to readers, never an input. The collector writes them from :func:`judge`,
and the gate calls :func:`judge` again on what it reads, under the policy version it prints.
Every rule reads facts (outcomes, values and bounds, provenance, selection), never a ``passed``
flag; a fact the record does not state counts against qualification.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from pytest_specgate.contracts.host import HostProvenance
from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL, is_inconclusive_failure
from pytest_specgate.evidence._acrecord import (
    AcOutcome,
    AcRecord,
    EngineFact,
    HardwareFact,
    RunModeName,
    TestEntry,
    Waiver,
)
from pytest_specgate.evidence._identity_memo import LatestByIdentity

POLICY_VERSION = "specgate.policy/1"
SIMULATED_BACKENDS = frozenset({"mock"})
_FAILING = frozenset({"failed", "error", "xpassed"})
_NOT_RUN = frozenset({"skipped", "xfailed"})


@dataclass(frozen=True)
class PolicyVerdict:
    """``waiver`` is the waiver that counts: stated alike by every test of the AC, else None."""

    qualifying: bool
    reasons: tuple[str, ...]
    outcome: AcOutcome
    mode: RunModeName
    waiver: Waiver | None
    policy: str = POLICY_VERSION

    @property
    def label(self) -> str:
        """The verdict as the PR-body block shows it: ``PASSED · QUALIFYING``."""
        return f"{self.outcome.upper()} · {'QUALIFYING' if self.qualifying else 'NOT QUALIFYING'}"


@dataclass(frozen=True)
class JudgedRecord:
    """A record the collector built and judged once: ``record`` is its typed view, its document
    carrying the verdict's labels (outcome, qualification, reasons, mode, waiver), and
    ``verdict`` what :func:`judge` said of it. The bundle writer takes these as they are instead
    of judging each record a second time; the gate still judges what it reads."""

    record: AcRecord
    verdict: PolicyVerdict

    @property
    def document(self) -> Mapping[str, JsonValue]:
        return self.record.document


def judged_record(facts: Mapping[str, JsonValue]) -> JudgedRecord:
    """``facts`` (a record as built, its labels not yet set) typed and judged once, with the
    labels the verdict derives put in its document and in its typed view alike."""
    built = AcRecord.built(facts)
    verdict = judge(built)
    waiver = None if verdict.waiver is None else verdict.waiver.to_dict()
    document: dict[str, JsonValue] = {
        **facts,
        "outcome": verdict.outcome,
        "qualifying": verdict.qualifying,
        "not_qualifying_reasons": list(verdict.reasons),
        "mode": verdict.mode,
        "waiver": waiver,
    }
    record = replace(
        built, outcome=verdict.outcome, qualifying=verdict.qualifying, reasons=verdict.reasons,
        mode=verdict.mode, waiver=verdict.waiver, document=document,
    )
    return JudgedRecord(record=record, verdict=verdict)


def ac_outcome(outcomes: Iterable[str]) -> AcOutcome:
    """An AC passes only when every one of its tests passed."""
    seen = set(outcomes)
    if seen & _FAILING:
        return "failed"
    if "interrupted" in seen:
        return "incomplete"
    if seen & _NOT_RUN or not seen:
        return "skipped"
    return "passed"


def judge(record: AcRecord) -> PolicyVerdict:
    """The verdict of ``record`` under :data:`POLICY_VERSION`; every reason names its fact."""
    mode = _mode(record)
    waiver, waiver_reasons = _effective_waiver(record)
    census_reasons = _census_reasons(record)
    reasons = [
        *_run_reasons(record, mode),
        *boot_session_reasons(record),
        *_host_reasons(record),
        *_source_reasons(record),
        *_completeness_reasons(record),
        *census_reasons,
        *_run_provenance_reasons(record),
        *waiver_reasons,
    ]
    for test in record.tests:
        reasons += _test_reasons(test, record.host.facts)
    reasons += measurement_reasons(record)
    reasons += [
        f"attachment {row.nodeid}: {row.name}" + (f" ({row.problem})" if row.problem else "")
        + " is missing from the bundle"
        for row in record.attachments
        if not row.stored
    ]
    outcome = measured_outcome(ac_outcome(test.outcome for test in record.tests), record)
    if outcome == "passed" and not _complete(record, census_reasons):
        outcome = "incomplete"
    # Two engines of one configuration (a pooled one and a booted baseline) give one reason.
    unique = tuple(dict.fromkeys(reasons))
    return PolicyVerdict(qualifying=not unique, reasons=unique, outcome=outcome, mode=mode, waiver=waiver)


def measurement_reasons(record: AcRecord) -> list[str]:
    """One reason per figure not shown to meet its bounds, recomputed from value, interval, bounds
    and rule; an inconclusive one says so, with its interval, level and bound."""
    reasons = []
    for row in record.measurements:
        bounded = row.at_least is not None or row.at_most is not None
        low_level = not (row.confidence_level or 0) >= DEFAULT_CONFIDENCE_LEVEL
        if bounded and row.decide == "interval" and low_level:
            reasons.append(f"{row.nodeid}: {row.name} is judged on an interval at confidence level "
                           f"{row.confidence_level}, below the {DEFAULT_CONFIDENCE_LEVEL:g} that qualifies")
        verdict = row.verdict
        if verdict.reason is None:
            continue
        shown = f"{row.value}" + (f" {row.unit}" if row.unit else "")
        if verdict.verdict == "inconclusive":
            level = "" if row.confidence_level is None else f" at {row.confidence_level:.0%} confidence"
            reasons.append(f"{row.nodeid}: {row.name} = {shown} is inconclusive{level}: "
                           f"{verdict.reason}; an undecided measurement never qualifies")
        else:
            rule = " (judged on its interval)" if row.decide == "interval" else ""
            reasons.append(f"{row.nodeid}: {row.name} = {shown} {verdict.reason}{rule}")
    return reasons


def measured_outcome(outcome: AcOutcome, record: AcRecord) -> AcOutcome:
    """The AC's outcome once its figures are judged again: a figure shown to miss fails it; one
    that is undecided makes it ``inconclusive`` when nothing else failed (tests that failed only
    on inconclusive figures say so at the start of their message, :func:`is_inconclusive_failure`)."""
    verdicts = {row.verdict.verdict for row in record.measurements}
    if "failed" in verdicts:
        return "failed" if outcome == "passed" else outcome
    if "inconclusive" not in verdicts:
        return outcome
    if outcome == "passed":
        return "inconclusive"
    failing = [test for test in record.tests if test.outcome in _FAILING]
    if outcome == "failed" and all(
        test.outcome == "failed" and is_inconclusive_failure(test.message)
        for test in failing
    ):
        return "inconclusive"
    return outcome


def boot_session_reasons(record: AcRecord) -> list[str]:
    """A host that booted again during the run (a reboot, a kernel panic) disqualifies every AC
    of it: what was measured before and after ran on two different sessions of the machine."""
    start, end = record.run.boot_start, record.run.boot_end
    if start is not None and end is not None and start != end:
        return [f"the host rebooted during the run (boot session {start} at the start, {end} at the end)"]
    return []


def _mode(record: AcRecord) -> RunModeName:
    modes = {test.mode for test in record.tests}
    if record.run.diagnostic or "diagnostic" in modes:
        return "diagnostic"
    return "required" if "required" in modes else "default"


def _run_reasons(record: AcRecord, mode: str) -> list[str]:
    reasons = []
    if mode == "diagnostic":
        reasons.append("diagnostic run: evidence from --specgate-diagnostic never qualifies")
    scale = record.run.duration_scale
    if scale is None:
        reasons.append("duration scale unknown: the record does not say whether durations were shortened")
    elif scale != 1:
        reasons.append(f"--specgate-duration-scale {scale:g} is not 1: durations were shortened")
    if record.run.interrupted:
        reasons.append("the run was interrupted before it finished")
    return reasons


def _host_reasons(record: AcRecord) -> list[str]:
    """:func:`host_reasons` of the record's provenance: read from its typed view where that was
    read (once per run for a bundle's records, ``_acrecord.RunTyping``), else from the JSON."""
    typed = record.host.provenance
    if typed is not None:
        return list(_TYPED_PROVENANCE_REASONS(typed))
    host = record.document.get("host")
    return host_reasons(host.get("provenance") if isinstance(host, Mapping) else None)


_TYPED_PROVENANCE_REASONS = LatestByIdentity(HostProvenance.reasons)
"""A run's typed host provenance judged once: it is immutable, and a bundle's records share it."""


def host_reasons(provenance: JsonValue) -> list[str]:
    """Why a recorded ``host.provenance`` keeps evidence from qualifying (simulated, untrusted tools),
    in the provenance's own words, shared with ``specgate hosts``."""
    from pytest_specgate.contracts.host import HostFactsError, HostProvenance

    if provenance is None:
        return ["host provenance unknown: the record does not say where its host facts came from"]
    try:
        return list(HostProvenance.from_record(provenance).reasons())
    except HostFactsError as error:
        return [f"host provenance unreadable, so the host is unknown: {error}"]


def _source_reasons(record: AcRecord) -> list[str]:
    source = record.source
    if source.commit is None:
        return [f"source commit unknown: {source.problem or 'no git commit'}"]
    if source.dirty is None or source.changed_files is None:
        return ["source state unknown: the record does not say which files differ from the commit"]
    if source.changed_files:
        shown = ", ".join(source.changed_files)
        return [
            f"files the run imported are not those of commit {source.commit[:12]} (compared by git blob "
            f"hash; --specgate-allow-dirty cannot excuse them): {shown}"
        ]
    if source.dirty and not source.allow_dirty:
        return ["working tree has uncommitted changes (--specgate-allow-dirty not given)"]
    return []


def _complete(record: AcRecord, census_reasons: list[str]) -> bool:
    """``census_reasons``: :func:`_census_reasons` of ``record``, which :func:`judge` has already."""
    completeness = record.completeness
    skipped = [test for test in record.tests if test.outcome in _NOT_RUN]
    return not (completeness.deselected or completeness.not_reached or completeness.skipped or skipped
                or census_reasons)


def not_collected(census_tests: Iterable[str], reported: Iterable[str], deselected: Iterable[str],
                  not_reached: Iterable[str]) -> list[str]:
    """The AC's tests in the full collection that the run never collected: neither reported,
    deselected nor left unreached (those have reasons of their own)."""
    seen = {*reported, *deselected, *not_reached}
    return sorted(nodeid for nodeid in census_tests if nodeid not in seen)


def _census_reasons(record: AcRecord) -> list[str]:
    """Tests of the AC that a full collection of the configured testpaths found and this run
    did not collect (a path or node id on the command line, ``--ignore``, ``collect_ignore``,
    ``addopts``): recomputed from the census, never read from ``not_collected``."""
    census = record.completeness.collection
    ac_id = record.ac.id
    if census is None:
        return [f"completeness unknown: the record holds no full collection of the testpaths, so "
                f"which tests {ac_id} has is unknown"]
    where = ", ".join(census.testpaths) or "the rootdir"
    if census.problem is not None:
        return [f"completeness unknown: the full collection of {where} failed: {census.problem}"]
    reasons = []
    if census.errors:
        reasons.append(f"completeness unknown: the full collection of {where} could not collect "
                       f"{', '.join(census.errors)}, so whether they hold tests of {ac_id} is unknown")
    missing = not_collected(census.tests, (test.nodeid for test in record.tests),
                            record.completeness.deselected, record.completeness.not_reached)
    if missing:
        reasons.append(f"incomplete: {len(missing)} test(s) of {ac_id} in {where} were not collected by "
                       f"this run: {', '.join(missing)} ({_selection_used(record)})")
    return reasons


RECENT_RUN_PROVENANCES = 8
"""How many runs' provenance judgements are kept: ``compare`` judges its two bundles' records in
turn and ``merge`` several bundles' (one entry each)."""


@dataclass
class _RunProvenanceJudged:
    """The run provenances judged lately and their reasons: every record of a run holds the run's
    one mapping (the collector's records, the writer's and the reader's joined from one
    ``run.json`` entry), so a thousand ACs judge it once, not a thousand times, also where the
    records of two runs are judged in turn (``compare``: base, new, base...). Matched by
    identity, each mapping kept alive here; records are never changed after they are built."""

    recent: list[tuple[JsonValue, tuple[str, ...]]] = field(default_factory=list)

    def reasons(self, provenance: JsonValue) -> tuple[str, ...]:
        for judged, reasons in self.recent:
            if judged is provenance:
                return reasons
        from pytest_specgate.evidence._run_provenance import run_provenance_reasons

        reasons = tuple(run_provenance_reasons(provenance))
        self.recent = [(provenance, reasons), *self.recent[: RECENT_RUN_PROVENANCES - 1]]
        return reasons


_RUN_PROVENANCES = _RunProvenanceJudged()


def _run_provenance_reasons(record: AcRecord) -> list[str]:
    """What shaped the run from outside the repository and disqualifies (``_run_provenance``)."""
    return list(_RUN_PROVENANCES.reasons(record.document.get("run_provenance")))


def _selection_used(record: AcRecord) -> str:
    selection = record.completeness.selection
    used = [f"args {' '.join(selection.args)}" if selection.args else "no args"]
    used += [f"-k {selection.keyword!r}"] if selection.keyword else []
    used += [f"-m {selection.markexpr!r}"] if selection.markexpr else []
    return f"selection: {'; '.join(used)}"


def _completeness_reasons(record: AcRecord) -> list[str]:
    completeness = record.completeness
    reasons = []
    for what, nodeids in (("deselected", completeness.deselected), ("not reached", completeness.not_reached)):
        if nodeids:
            reasons.append(
                f"incomplete: {len(nodeids)} test(s) of {record.ac.id} {what}: {', '.join(nodeids)} "
                f"({_selection_used(record)})"
            )
    return reasons


def _effective_waiver(record: AcRecord) -> tuple[Waiver | None, list[str]]:
    stated = {test.waiver for test in record.tests}
    if stated == {None}:
        return None, []
    census = record.completeness.collection
    unseen = record.completeness.deselected + record.completeness.not_reached + tuple(
        () if census is None else not_collected(census.tests, (test.nodeid for test in record.tests),
                                                record.completeness.deselected,
                                                record.completeness.not_reached))
    if unseen:
        return None, [
            f"waiver does not count: {len(unseen)} test(s) of {record.ac.id} did not run, so whether "
            f"they state it is unknown: {', '.join(unseen)}"
        ]
    if len(stated) == 1:
        (waiver,) = stated
        return waiver, []
    without = [test.nodeid for test in record.tests if test.waiver is None]
    targets = sorted({f"{waiver.to} ({waiver.reason})" for waiver in stated if waiver is not None})
    detail = f"not stated by {', '.join(without)}" if without else f"tests state {'; '.join(targets)}"
    return None, [f"waiver does not count: every test of {record.ac.id} must state the same waiver, {detail}"]


def _test_reasons(test: TestEntry, host_facts: Mapping[str, JsonValue]) -> list[str]:
    reasons = [f"{test.nodeid}: {why}" for why in _hardware_reasons(test.hardware, host_facts)]
    if test.engines is None:
        reasons.append(f"{test.nodeid}: engines unknown: the plugin wrote no engine facts for this test")
    for engine in test.engines or ():
        reasons += [f"{test.nodeid}: {why}" for why in _engine_reasons(engine, test.hardware is not None)]
    if test.outcome != "passed":
        reasons.append(f"{test.nodeid}: {test.outcome}" + (f": {test.message}" if test.message else ""))
    return reasons


def _hardware_reasons(hardware: HardwareFact | None, host_facts: Mapping[str, JsonValue]) -> list[str]:
    """The runner's verdict, then the same requirement matched again against the recorded facts.

    The opt-in environment variable is not recorded, so only the runner's verdict speaks for it.
    """
    if hardware is None:
        return []
    if not hardware.matched:
        return [f"hardware requirement not met: {'; '.join(hardware.reasons) or 'no reason given'}"]
    if hardware.requirement is None:
        return ["hardware requirement not recorded: its verdict cannot be recomputed"]
    return list(_RECOMPUTED.reasons(hardware.requirement, host_facts))


RECOMPUTED_KEPT = 256
"""Pairs of a requirement and host facts whose recomputed verdicts are kept."""


@dataclass
class _Recomputed:
    """Hardware verdicts matched again against recorded host facts, once per pair of values: every
    AC of a run holds the run's facts and most share a few requirements (1,000 ACs recomputed one
    verdict 1,000 times). A pair is known by its ``repr``: the same keys in the same order and the
    same values of the same types (``1``, ``1.0`` and ``True`` are equal in Python, not here)."""

    verdicts: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def reasons(
        self, requirement: Mapping[str, JsonValue], host_facts: Mapping[str, JsonValue]
    ) -> tuple[str, ...]:
        key = (repr(requirement), repr(host_facts))
        known = self.verdicts.get(key)
        if known is None:
            if len(self.verdicts) >= RECOMPUTED_KEPT:
                self.verdicts.clear()
            known = self.verdicts[key] = _recomputed_reasons(requirement, host_facts)
        return known


def _recomputed_reasons(
    requirement: Mapping[str, JsonValue], host_facts: Mapping[str, JsonValue]
) -> tuple[str, ...]:
    from pytest_specgate.contracts.hardware import RequirementError
    from pytest_specgate.contracts.host import HostFactsError, host_facts_from_dict
    from pytest_specgate.selection.hardware import evaluate_requirement, requirement_from_dict

    try:
        parsed = requirement_from_dict(requirement)
        host = host_facts_from_dict(host_facts, where="recorded host facts")
    except (RequirementError, HostFactsError) as error:
        return (f"hardware verdict cannot be recomputed: {error}",)
    recomputed = evaluate_requirement(parsed, host, {parsed.env: "1"} if parsed.env else {})
    if recomputed.matched:
        return ()
    return (f"hardware requirement not met by the recorded host facts: {'; '.join(recomputed.reasons)}",)


_RECOMPUTED = _Recomputed()


def memory_reasons(engine: EngineFact) -> list[str]:
    """An engine whose teardown left the host (or a GPU) short of the free memory it had before
    the boot did not leave the host clean: what ran after it ran on a smaller machine. Unknown
    (not read, or still up when the record was taken) is no reason, and never shown as clean."""
    memory = engine.memory_returned
    if not isinstance(memory, Mapping) or memory.get("returned") is not False:
        return []
    short = []
    for side, label in (("host", "host memory"), ("gpu", "GPU memory")):
        figures = memory.get(side)
        if isinstance(figures, Mapping) and figures.get("returned") is False:
            short.append(f"{label} {figures.get('after_bytes')} bytes free after, "
                         f"{figures.get('before_bytes')} before boot "
                         f"(tolerance {figures.get('tolerance_bytes')})")
    return [f"the {engine.backend} engine did not give its memory back at teardown: {'; '.join(short)}"]


def _engine_reasons(engine: EngineFact, hardware_checked_here: bool) -> list[str]:
    memory = memory_reasons(engine)
    if memory:
        return [*memory, *_identity_reasons(engine, hardware_checked_here)]
    return _identity_reasons(engine, hardware_checked_here)


def _identity_reasons(engine: EngineFact, hardware_checked_here: bool) -> list[str]:
    url = engine.url or "an unknown address"
    if engine.reported_backend is not None and engine.reported_backend != engine.backend:
        return [f"the engine booted by the {engine.backend!r} backend reports itself as "
                f"{engine.reported_backend!r}: an engine is known by the configuration that booted it, "
                "and one that says otherwise is not believed"]
    if engine.backend in SIMULATED_BACKENDS or engine.simulated:
        return [
            f"ran on the built-in mock engine ({engine.model}), a simulation: only a real engine's "
            "evidence qualifies"
        ]
    if engine.simulated is None:
        name = f"{engine.backend} engine" + (f" {engine.model}" if engine.model else "")
        return [f"{name}: the record does not say whether it is simulated"]
    reasons = []
    if engine.version_known is not True:
        reasons.append(f"the version of the {engine.backend} engine at {url} could not be read: "
                       "a real engine must say what it is")
    if hardware_checked_here and engine.loopback is not True:
        where = "not a loopback address" if engine.loopback is False else "an unknown address"
        reasons.append(f"the {engine.backend} engine at {url} is not on this host ({where}): "
                       "the hardware marker was checked here, not there")
    return reasons


def engine_requirement_reasons(record: AcRecord, engine_free: bool) -> list[str]:
    """A hardware AC must name the engine its figures came from, unless the trusted config declares
    it engine-free (``[tool.specgate.acs."AC-N"] engine = false``).

    A hardware spec that records figures but never boots an engine would otherwise qualify on
    numbers nothing measured. The gate applies this rule with the trusted config; it is kept out of
    :func:`judge`, which sees only the record, so every renderer of a bundle agrees with its writer.
    """
    if engine_free:
        return []
    on_hardware = [test.nodeid for test in record.tests if test.hardware is not None]
    if not on_hardware or any(test.engines for test in record.tests):
        return []
    return [
        f"hardware AC records no engine: no test of {record.ac.id} ({', '.join(on_hardware)} on hardware) "
        "recorded one; only an AC the trusted config declares engine-free "
        f'([tool.specgate.acs."{record.ac.id}"] engine = false) qualifies without'
    ]
