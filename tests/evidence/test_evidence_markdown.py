"""``evidence.md`` as a release manager reads it: a summary table first, then self-contained blocks
that name their engines, group measurements by test, say ``recorded`` for a figure without a
bound, give a reason shared by many tests once with its count, and link attachments relatively.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import CLEAN_RUN_PROVENANCE, cli
from test_evidence_signing import pem_key

from pytest_specgate.evidence import build_redactor
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._markdown import (
    LAYOUT_PER_BLOCK,
    NOT_SIGNED,
    RUNS_INTRO,
    parse_pr_body,
    render_ac_block,
    render_markdown,
    shared_run_facts,
)
from pytest_specgate.evidence._policy import judge
from pytest_specgate.evidence._signing import load_signing_key, sign_bundle
from pytest_specgate.evidence.cli_commands import configure_render_parser, run_render

LEGACY_AC10 = Path(__file__).parent / "legacy_bundles" / "evidence-v2" / "AC-10.json"
FILE = "acceptance/test_gate.py"
MOCK_ENGINE = {
    "backend": "mock",
    "config": "mock target=tiny:target",
    "identity": {
        "engine": "specgate-mock",
        "models": [{"id": "tiny:target", "owned_by": "specgate-mock"}],
        "server": "uvicorn",
        "system_fingerprint": None,
        "url": "http://127.0.0.1:40001",
        "version": "0.1.0",
    },
    "loopback": True,
    "model": "tiny:target",
    "simulated": True,
    "version_known": True,
    "versions": {"backend": "mock", "version": "0.1.0"},
}
SHA = "a" * 64


def _document(tests: int) -> dict[str, Any]:
    """The legacy AC-10 record, widened to ``tests`` parametrized tests that ran on the mock."""
    document: dict[str, Any] = json.loads(LEGACY_AC10.read_text())
    template = document["tests"][0]
    document["tests"] = []
    document["measurements"] = []
    for index in range(tests):
        test = copy.deepcopy(template)
        test["nodeid"] = f"{FILE}::test_gated[{index}]"
        test["hardware"] = None
        engine = copy.deepcopy(MOCK_ENGINE)
        engine["identity"]["url"] = f"http://127.0.0.1:{40001 + index}"  # each boot gets its own port
        test["engines"] = [engine]
        document["tests"].append(test)
        document["measurements"].append(
            {"at_least": None, "at_most": 0, "name": f"drafted_{index}", "nodeid": test["nodeid"],
             "passed": True, "unit": "tokens", "value": 0}
        )
    document["attachments"] = [
        {**document["attachments"][0], "nodeid": f"{FILE}::test_gated[1]"},
        {"name": "plot.png", "nodeid": f"{FILE}::test_gated[0]", "path": "attachments/0123-plot.png",
         "sha256": SHA, "size": 3, "stored": True, "text": False},
    ]
    return _whole(document)


def _whole(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as a record of this format: a census that found every test, a clean run."""
    tests = [test["nodeid"] for test in document["tests"]]
    collection = {"testpaths": ["."], "tests": tests, "errors": [], "problem": None}
    document["completeness"]["collection"] = collection
    document["completeness"]["not_collected"] = []
    document["run_provenance"] = dict(CLEAN_RUN_PROVENANCE)
    return document


def _block(document: dict[str, Any]) -> str:
    record = AcRecord.built(document)
    return render_ac_block(record, judge(record), SHA, SHA)


def test_a_reason_shared_by_fourteen_tests_appears_once_with_its_count() -> None:
    block = _block(_document(14))
    mock_reason = (
        "ran on the built-in mock engine (tiny:target), a simulation: only a real engine's evidence qualifies"
    )
    assert f"  - {mock_reason} (14 tests)" in block.splitlines()
    assert block.count(mock_reason) == 1
    assert "- Qualifying: no (specgate.policy/1), 1 reason:" in block
    assert max(len(line) for line in block.splitlines()) < 200


def test_a_reason_of_one_test_names_that_test() -> None:
    document = _document(2)
    document["tests"][1]["engines"] = []
    assert "(`test_gated[0]`)" in _block(document)


def test_each_block_names_its_engines_with_version_and_the_servers_own_identity() -> None:
    block = _block(_document(3))
    assert (
        "- Engine (3 tests): mock (simulated), model tiny:target, version 0.1.0; the server says: "
        "specgate-mock (version 0.1.0), header uvicorn, serving tiny:target"
    ) in block.splitlines()
    record = AcRecord.built(_document(3))
    assert "the server says: specgate-mock 0.1.0, header uvicorn" in render_ac_block(
        record, judge(record), SHA, SHA, LAYOUT_PER_BLOCK)
    document = _document(1)
    document["tests"][0]["engines"] = []
    assert "- Engines: none recorded" in _block(document)


def test_measurements_are_grouped_by_test_and_a_row_without_a_bound_says_recorded() -> None:
    document = _document(2)
    document["measurements"].insert(
        1, {"at_least": None, "at_most": None, "name": "pooled_speedup", "nodeid": f"{FILE}::test_gated[0]",
            "passed": True, "unit": "x", "value": 1.9}
    )
    lines = _block(document).splitlines()
    table = lines[lines.index("| test | measurement | value | bound | result |") + 2 :]
    assert table[:3] == [
        "| `test_gated[0]` | drafted_0 | 0 tokens | ≤ 0 | pass |",
        "|  | pooled_speedup | 1.9 x | — | recorded |",
        "| `test_gated[1]` | drafted_1 | 0 tokens | ≤ 0 | pass |",
    ]


def test_attachments_are_relative_links_grouped_by_test() -> None:
    block = _block(_document(2))
    assert "  - [plot.png](<attachments/0123-plot.png>) (`test_gated[0]`)" in block
    assert "  - [server.log](<attachments/e7df27adf94282be-server.log>) (`test_gated[1]`)" in block
    record = AcRecord.built(_document(2))
    layout_1 = render_ac_block(record, judge(record), SHA, SHA, LAYOUT_PER_BLOCK)
    assert "  - `test_gated[0]`: [plot.png](<attachments/0123-plot.png>)" in layout_1


def test_the_summary_comes_first_outside_the_blocks_and_names_the_deciding_figure() -> None:
    passing = AcRecord.built(_whole(json.loads(LEGACY_AC10.read_text())))
    failing_document = _document(2)
    failing_document["ac"]["id"] = "AC-11"
    failing_document["measurements"][1]["value"] = 3
    failing = AcRecord.built(failing_document)
    judged = [(passing, judge(passing), SHA), (failing, judge(failing), SHA)]
    markdown = render_markdown(judged, SHA)
    lines = markdown.splitlines()
    assert lines[:12] == [
        "## specgate summary",
        "",
        RUNS_INTRO,
        "",
        f"- Run 1 (`{passing.run.id}`, 2 ACs): host Apple M4, 16 GB, macOS 15.1",
        "",
        f"Signer of every AC here: {NOT_SIGNED}",
        "",
        "| AC | verdict | deciding figure (bound) | host | engine |",
        "|---|---|---|---|---|",
        "| AC-10 | PASSED · QUALIFYING | median_speedup 1.52 x ≥ 1.4 | run 1 | none recorded |",
        "| AC-11 | FAILED · NOT QUALIFYING | drafted_1 3 tokens ≤ 0 | run 1 | "
        "mock (simulated), model tiny:target |",
    ]
    assert lines[13] == "## AC-10 evidence"
    assert [block.ac_id for block in parse_pr_body(markdown, "evidence.md")] == ["AC-10", "AC-11"]
    assert markdown == render_markdown(judged, SHA)
    run = shared_run_facts(judged)[passing.run.id]
    assert render_ac_block(failing, judge(failing), SHA, SHA, run=run) in markdown
    layout_1 = render_markdown(judged, SHA, layout=LAYOUT_PER_BLOCK).splitlines()
    assert layout_1[2:4] == ["| AC | verdict | deciding figure (bound) | host | engine | signer |",
                             "|---|---|---|---|---|---|"]
    assert layout_1[4].endswith("| Apple M4, 16 GB, macOS 15.1 | none recorded | not signed when written |")


def test_render_names_the_key_ids_a_signed_bundle_claims_and_the_file_says_not_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(LEGACY_AC10.parent, bundle)
    written = (bundle / "evidence.md").read_text()
    assert f"| {NOT_SIGNED} |" in written
    key = load_signing_key(pem_key(tmp_path, "desk").path, {})
    sign_bundle(bundle, key, build_redactor(None))
    code, out, _ = cli(capsys, configure_render_parser, run_render, str(bundle))
    assert code == 0 and out == written.replace(NOT_SIGNED, f"{key.keyid} (claimed; the gate verifies)")


def test_a_run_whose_acs_show_different_hosts_shares_only_its_reasons_and_each_block_names_it() -> None:
    """Two ACs of one diagnostic run whose host lines differ (a test's hardware verdict may word
    it): the summary lists the run's reason once and says the hosts differ; each block states its
    own host and names the run, by its id, for the reason."""
    documents = []
    for ac_id, host in (("AC-10", "Apple M4, 16 GB, macOS 15.1"), ("AC-11", "Apple M4, 16 GB, macOS 15.2")):
        document = _whole(json.loads(LEGACY_AC10.read_text()))
        document["ac"]["id"] = ac_id
        document["run"]["diagnostic"] = True
        document["host"]["summary"] = host
        documents.append(AcRecord.built(document))
    judged = [(record, judge(record), SHA) for record in documents]
    markdown = render_markdown(judged, SHA)
    run = documents[0].run.id
    differ = "hosts differ (each block states its own); 1 reason not to qualify:"
    assert f"- Run 1 (`{run}`, 2 ACs): {differ}" in markdown
    blocks = markdown.split("\n## ")[1:]
    for block, host in zip(blocks, ("macOS 15.1", "macOS 15.2"), strict=True):
        assert f"- Host: Apple M4, 16 GB, {host}\n" in block
        assert (f"- Qualifying: no (specgate.policy/1), 1 reason: the 1 of run 1 (`{run}`), in the summary "
                "(the gate prints them)\n") in block
    assert markdown.count("diagnostic run: evidence from --specgate-diagnostic never qualifies") == 1
