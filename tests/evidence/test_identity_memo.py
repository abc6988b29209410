"""Run-wide facts typed once per run (``_identity_memo``, ``_acrecord.RunTyping``) give what
typing each record whole gives, and the judge's host reasons what the record's JSON gives.

The slow path types a deep copy of the record's document without a ``RunTyping``: nothing is
remembered for it. Records of several runs read in turn (a merged bundle's) must each get their
own run's facts, and the same verdict.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_specgate.evidence import _policy
from pytest_specgate.evidence._acrecord import AcRecord, RunTyping
from pytest_specgate.evidence._identity_memo import RECENT_RUNS, LatestByIdentity
from pytest_specgate.evidence._policy import host_reasons, judge

LEGACY_AC10 = Path(__file__).parent / "legacy_bundles" / "evidence-v2" / "AC-10.json"
_BASE: dict[str, Any] = json.loads(LEGACY_AC10.read_text())
_UNTRUSTED_TOOL = {"answer_sha256": None, "name": "sysctl", "path": "/tmp/sysctl", "system_location": False}

# One run's facts: each choice changes what the policy says of the run, or how it is typed.
_RUN_FACTS = st.fixed_dictionaries({
    "origin": st.sampled_from(["probe", "file", "hook", "edited", "nonsense"]),
    "untrusted_tool": st.booleans(),
    "provenance_missing": st.booleans(),
    "commit": st.sampled_from(["96a656ad44caf042f266058f0794c5fc2bf014bc", None]),
    "dirty": st.sampled_from([False, True, None]),
    "allow_dirty": st.booleans(),
    "changed": st.sampled_from([[], ["src/a.py"], None]),
    "imported": st.sampled_from([None, [], ["src/a.py", "tests/test_a.py"]]),
    "diagnostic": st.booleans(),
    "interrupted": st.booleans(),
    "scale": st.sampled_from([1.0, 0.5, None]),
    "boot": st.sampled_from([None, ("b1", "b1"), ("b1", "b2")]),
    "args": st.sampled_from([[], ["tests"], ["-x", "acceptance"]]),
    "keyword": st.sampled_from([None, "speedup"]),
})


def _run_document(facts: dict[str, Any]) -> dict[str, Any]:
    """A record of a run with these facts, every mapping of it new."""
    document = copy.deepcopy(_BASE)
    provenance = document["host"]["provenance"]
    provenance["origin"] = facts["origin"]
    provenance["simulated"] = facts["origin"] in ("file", "hook", "edited")
    provenance["detail"] = None if facts["origin"] == "probe" else "linux.json"
    if facts["untrusted_tool"]:
        provenance["tools"] = [_UNTRUSTED_TOOL]
    if facts["provenance_missing"]:
        document["host"]["provenance"] = None
    document["source"] |= {"commit": facts["commit"], "dirty": facts["dirty"],
                           "allow_dirty": facts["allow_dirty"], "changed_files": facts["changed"]}
    if facts["imported"] is not None:
        document["source"]["imported_files"] = facts["imported"]
    document["run"] |= {"diagnostic": facts["diagnostic"], "interrupted": facts["interrupted"],
                        "duration_scale": facts["scale"]}
    if facts["boot"] is not None:
        document["run"]["boot_session"] = {"start": facts["boot"][0], "end": facts["boot"][1]}
    document["completeness"]["selection"] = {"args": facts["args"], "keyword": facts["keyword"],
                                             "markexpr": None}
    return document


def _records_of_a_run(document: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """``count`` records of one run: each its own AC, all holding the run's one mapping of each
    run-wide fact, as records joined from one ``run.json`` entry do."""
    return [{**document, "ac": {**document["ac"], "id": f"AC-{10 + index}"}} for index in range(count)]


def _read_in_turn(runs: list[dict[str, Any]], order: Any) -> list[tuple[dict[str, Any], AcRecord]]:
    """Three records of each run, shuffled, each typed twice with one ``RunTyping``, as a bundle
    of several runs is read: every document with its typed view."""
    documents = [record for facts in runs for record in _records_of_a_run(_run_document(facts), 3)]
    order.shuffle(documents)
    typing = RunTyping()
    return [(document, AcRecord.built(document, typing)) for document in documents * 2]


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(_RUN_FACTS, min_size=1, max_size=RECENT_RUNS + 3),
       order=st.randoms(use_true_random=False))
def test_records_of_runs_typed_in_turn_are_what_each_typed_whole_gives(
    runs: list[dict[str, Any]], order: Any
) -> None:
    for document, remembered in _read_in_turn(runs, order):
        whole = AcRecord.built(copy.deepcopy(document))
        assert remembered == whole
        assert judge(remembered) == judge(whole)


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(_RUN_FACTS, min_size=1, max_size=RECENT_RUNS + 3),
       order=st.randoms(use_true_random=False))
def test_the_judge_reads_a_shared_typed_provenance_as_its_json_says(
    runs: list[dict[str, Any]], order: Any
) -> None:
    """The judge takes a record's host reasons from its typed provenance (shared by a run's
    records, judged once) where there is one; they are what the JSON it was read from gives."""
    for document, record in _read_in_turn(runs, order):
        assert _policy._host_reasons(record) == host_reasons(document["host"]["provenance"])


def test_the_answer_is_the_mapping_met_not_one_equal_to_it_or_at_its_address() -> None:
    """Each fresh mapping gets its own answer, though CPython often puts a new mapping where a
    freed one was: the memo keeps what it met alive, so an address is never met twice."""
    worked: list[object] = []
    answers = LatestByIdentity(lambda facts: worked.append(facts) or dict(facts))
    for number in range(50):
        assert answers({"number": number}) == {"number": number}
    assert len(worked) == 50
    kept = {"number": 7}
    assert answers(kept) is answers(kept) and len(worked) == 51


def test_the_last_runs_are_remembered_and_an_older_one_is_worked_out_again() -> None:
    worked: list[object] = []
    answers = LatestByIdentity(lambda facts: worked.append(facts) or len(worked))
    runs = [{"run": number} for number in range(RECENT_RUNS + 1)]
    first = [answers(run) for run in runs]
    assert [answers(run) for run in runs[1:]] == first[1:]
    assert len(worked) == RECENT_RUNS + 1
    assert answers(runs[0]) == RECENT_RUNS + 2
