"""``specgate merge``'s decisions: which record of an AC to keep, and whether commits may mix.

A fleet (an M4 desk, an M1 Air, a GB10) runs the same commit and each host holds the ACs its
hardware matches. Merging picks, per AC, the record that passed and qualified; everything it
decides is said in one line per AC, so a release manager never wonders where a record came
from. Bundles of different commits are refused unless the caller says they may mix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._bundle import Bundle
from pytest_specgate.evidence._policy import PolicyVerdict, judge

UNKNOWN_COMMIT = "unknown"


class MergeError(Exception):
    """Bundles that cannot be merged as asked (exit 2)."""


@dataclass(frozen=True)
class SourceRecords:
    """One verified input bundle and its AC records."""

    bundle: Bundle
    records: Mapping[str, AcRecord]

    def commits(self) -> tuple[str, ...]:
        return tuple(sorted({record_commit(record) for record in self.records.values()}))


@dataclass(frozen=True)
class MergeChoice:
    """The record kept for one AC, and the records of other bundles it was preferred to."""

    ac_id: str
    kept: Bundle
    record: AcRecord
    passed_over: tuple[tuple[Bundle, AcRecord], ...]
    verdicts: Mapping[int, PolicyVerdict] = field(default_factory=dict, compare=False, repr=False)
    """Each candidate record's verdict by ``id`` of the record, judged once (a record missing here
    is judged when asked)."""

    def _verdict(self, record: AcRecord) -> PolicyVerdict:
        verdict = self.verdicts.get(id(record))
        return judge(record) if verdict is None else verdict

    @property
    def kept_verdict(self) -> PolicyVerdict:
        """The kept record's verdict, as it was judged when chosen."""
        return self._verdict(self.record)

    def explain(self) -> str:
        kept = f"{self.ac_id}: kept run {self.kept.run_id} ({standing(self._verdict(self.record))})"
        if not self.passed_over:
            return f"{kept}: the only bundle with {self.ac_id}"
        others = ", ".join(
            f"run {bundle.run_id} ({standing(self._verdict(record))})" for bundle, record in self.passed_over
        )
        rank = _rank(self._verdict(self.record))
        if all(_rank(self._verdict(record)) == rank for _, record in self.passed_over):
            why = "equal standing, the first bundle given wins"
        else:
            why = "a passing, qualifying record wins over a passing one, which wins over the rest"
        return f"{kept} over {others}: {why}"


def record_commit(record: AcRecord) -> str:
    return record.source.commit or UNKNOWN_COMMIT


def standing(verdict: PolicyVerdict) -> str:
    """A record's standing as the verdict policy recomputes it, not as the record states it."""
    return f"{verdict.outcome}, {'qualifying' if verdict.qualifying else 'not qualifying'}"


def _rank(verdict: PolicyVerdict) -> int:
    passed = verdict.outcome == "passed"
    return 2 if passed and verdict.qualifying else int(passed)


def merged_commit(sources: Sequence[SourceRecords], allow_mixed: bool) -> str | None:
    """The one commit every record is for; None when they mix (only with ``allow_mixed``)."""
    commits = sorted({commit for source in sources for commit in source.commits()})
    if len(commits) == 1:
        return None if commits[0] == UNKNOWN_COMMIT else commits[0]
    if not allow_mixed:
        listed = "; ".join(
            f"{', '.join(source.commits()) or 'no records'} in run {source.bundle.run_id}"
            for source in sources
        )
        raise MergeError(
            f"bundles are for different commits ({listed}): merge runs of one commit, "
            "or pass --allow-mixed-commits"
        )
    return None


def choose_records(sources: Sequence[SourceRecords]) -> list[MergeChoice]:
    """Per AC (in id order), the best record: passing and qualifying, then passing, then any.

    Two qualifying records of one AC are ambiguous evidence, so that is a MergeError.
    """
    candidates: dict[str, list[tuple[Bundle, AcRecord]]] = {}
    for source in sources:
        for ac_id, record in source.records.items():
            candidates.setdefault(ac_id, []).append((source.bundle, record))
    choices = []
    for ac_id, found in sorted(candidates.items()):
        verdicts = {id(record): judge(record) for _, record in found}
        ranks = [_rank(verdicts[id(record)]) for _, record in found]
        qualifying = [bundle for (bundle, _), rank in zip(found, ranks, strict=True) if rank == 2]
        if len(qualifying) > 1:
            runs = " and ".join(f"{bundle.path}" for bundle in qualifying)
            raise MergeError(f"{ac_id} has qualifying evidence in both {runs}: merge only one of them")
        best = max(range(len(found)), key=lambda index: (ranks[index], -index))
        kept, record = found[best]
        others = tuple(pair for index, pair in enumerate(found) if index != best)
        choices.append(
            MergeChoice(ac_id=ac_id, kept=kept, record=record, passed_over=others, verdicts=verdicts)
        )
    return choices
