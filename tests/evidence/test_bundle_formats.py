"""Both on-disk bundle formats: ``specgate.evidence/v3`` records (compact JSON, written now) and
``specgate.evidence/v2`` records (indented, written before), read by gate, merge, render and sign.

``legacy_bundles/evidence-v2`` is a bundle the previous writer wrote (AC-10 on a matched
m4-16gb host with a measurement and an attachment, AC-11 without hardware), kept byte for byte
but for ``evidence.md`` and its manifest entry: a view of the records, outside the bundle digest,
re-rendered (``specgate render``) when the markdown layout changes.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from evidence_testkit import (
    AC10,
    AC11,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    ac_record,
    cli,
    gate,
    qualifying_bundle,
    record_line,
)
from test_evidence_signing import load_policy, pem_key, write_policy

from pytest_specgate.evidence import build_redactor, judge, load_bundle, read_records, verify_bundle
from pytest_specgate.evidence._acrecord import AcRecord
from pytest_specgate.evidence._bundle import BundleError
from pytest_specgate.evidence._jsonio import canonical_json, pretty_json
from pytest_specgate.evidence._record_split import RunFacts, join_record, split_records
from pytest_specgate.evidence._signing import load_signing_key, sign_bundle
from pytest_specgate.evidence._trust import judge_bundle
from pytest_specgate.evidence._writer import WrittenBundle
from pytest_specgate.evidence.cli_commands import (
    configure_merge_parser,
    configure_render_parser,
    run_merge,
    run_render,
)

LEGACY = Path(__file__).parent / "legacy_bundles" / "evidence-v2"
LEGACY_COMMIT = "96a656ad44caf042f266058f0794c5fc2bf014bc"
NOW = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)
NO_CENSUS = ("completeness unknown: the record holds no full collection of the testpaths, so which tests "
             "AC-10 has is unknown")


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    copy = tmp_path / "evidence" / LEGACY.name
    shutil.copytree(LEGACY, copy)
    return copy


ENGINE_FREE_AC10 = '[tool.specgate.acs."AC-10"]\nengine = false\n'
"""The legacy bundle's AC-10 ran on hardware without recording an engine (written before engines
were recorded): the trusted config must declare it engine-free for it to pass."""


def _gate_args(bundle: Path, body: Path, trusted: Path | None = None) -> list[str]:
    body.write_text("## Summary\n\n" + (bundle / "evidence.md").read_text())
    if trusted is None:
        trusted = body.with_name("trusted.toml")
        trusted.write_text(ENGINE_FREE_AC10)
    else:
        trusted.write_text(trusted.read_text() + "\n" + ENGINE_FREE_AC10)
    return [f"--commit={LEGACY_COMMIT}", f"--pr-body={body}", f"--evidence={bundle}",
            "--require=AC-10", "--require=AC-11", f"--trusted-config={trusted}"]


def test_records_are_written_compact_and_every_other_file_indented(git_repo: GitRepo) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    for ac in ("AC-10", "AC-11"):
        data = record_line(written.path, ac).decode()
        line = json.loads(data)
        assert line["ac"]["id"] == ac and line["run_facts"] == written.path.name
        assert data == canonical_json(line) + "\n" and data.count("\n") == 1
    manifest = (written.path / "manifest.json").read_text()
    assert json.loads(manifest)["schema"] == "specgate.manifest/v3"
    assert manifest == pretty_json(json.loads(manifest))
    for name in ("receipt.json", "statement.intoto.json"):
        text = (written.path / name).read_text()
        assert text == pretty_json(json.loads(text))
    assert written.markdown.startswith("## specgate summary\n")
    assert "## AC-10 evidence\n\n**Verdict: PASSED" in written.markdown


def test_a_bundle_of_the_previous_format_is_still_verified_and_judged_under_the_current_policy(
    legacy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It verifies and reads, but it holds no census (nor run provenance), so it no longer
    qualifies, whatever its record claims."""
    record = (legacy / "AC-10.json").read_text()
    assert json.loads(record)["schema"] == "specgate.evidence/v2" and record.startswith("{\n  ")
    assert json.loads((legacy / "manifest.json").read_text())["schema"] == "specgate.manifest/v1"
    bundle = load_bundle(legacy)
    assert verify_bundle(bundle) == []
    verdict = judge(read_records(bundle)["AC-10"])
    assert not verdict.qualifying and NO_CENSUS in verdict.reasons
    code, lines, err = gate(capsys, *_gate_args(legacy, tmp_path / "PR.md"))
    assert code == 1 and (
        "AC-10.json claims 'PASSED · QUALIFYING' but specgate.policy/1 recomputes "
        "'INCOMPLETE · NOT QUALIFYING'"
    ) in lines[0]
    assert "signatures not checked: no trust policy" in err


def test_render_prints_the_markdown_of_a_bundle_of_the_previous_format(
    legacy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, configure_render_parser, run_render, str(legacy))
    assert (code, err) == (0, "")
    assert out.startswith("## specgate summary\n")
    assert "## AC-10 evidence\n\n**Verdict: INCOMPLETE · NOT QUALIFYING**" in out
    assert NO_CENSUS in out


def test_merge_reads_the_previous_format_and_writes_the_new_one(
    legacy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merged = tmp_path / "merged"
    code, out, err = cli(capsys, configure_merge_parser, run_merge, str(legacy), f"--out={merged}")
    assert (code, err) == (0, "") and out.endswith(f"specgate merge: wrote {merged} (2 AC, "
                                                   f"bundle-sha256 {load_bundle(merged).digest})\n")
    for ac in ("AC-10", "AC-11"):
        old = json.loads((legacy / f"{ac}.json").read_text())
        # A format-2 line holds no row verdict: joining judges each row again, so a v2 row,
        # written before rows named one, comes back with it.
        judged = [{**row, "verdict": "passed" if row["passed"] else "failed"} for row in old["measurements"]]
        assert ac_record(merged, ac) == {**old, "schema": "specgate.evidence/v3", "measurements": judged}
    assert json.loads((merged / "manifest.json").read_text())["schema"] == "specgate.manifest/v3"
    code, lines, _ = gate(capsys, *_gate_args(merged, tmp_path / "PR.md"))
    assert code == 1 and any(line.startswith("AC-10: not qualifying") and NO_CENSUS in line for line in lines)


def test_a_signature_over_a_bundle_of_the_previous_format_verifies_under_a_trust_policy(
    legacy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    desk, stranger = pem_key(keys, "desk-m4"), pem_key(keys, "stranger")
    policy = load_policy(write_policy(tmp_path, {"desk-m4": (desk, ["m4-16gb"])})).trust
    assert policy is not None
    sign_bundle(legacy, load_signing_key(stranger.path, {}), build_redactor(None))
    assert judge_bundle(legacy, policy, NOW).problem == (
        f"signed only by unknown key {load_signing_key(stranger.path, {}).keyid} (not in the trust policy)")
    sign_bundle(legacy, load_signing_key(desk.path, {}), build_redactor(None))
    trust = judge_bundle(legacy, policy, NOW)
    assert trust.problem is None and trust.commit == LEGACY_COMMIT
    assert [signer.name for signer in trust.signers] == ["desk-m4"]


FORMAT_1 = Path(__file__).parent / "legacy_bundles" / "format-1"
"""A format-1 bundle (manifest v2, one compact ``specgate.evidence/v3`` file per AC) written by
main e65fb4e's writer from ``qualifying_bundle``: both ACs pass and qualify."""
FORMAT_1_COMMIT = "68091b431b8343a1c7aa6b67fe0110719674d9ba"


@pytest.fixture
def format_1(tmp_path: Path) -> Path:
    copy = tmp_path / "evidence" / FORMAT_1.name
    shutil.copytree(FORMAT_1, copy)
    return copy


def _format_1_gate(bundle: Path, body: Path) -> list[str]:
    body.write_text("## Summary\n\n" + (bundle / "evidence.md").read_text())
    return [f"--commit={FORMAT_1_COMMIT}", f"--pr-body={body}", f"--evidence={bundle}",
            "--require=AC-10", "--require=AC-11"]


def test_a_format_1_bundle_of_main_verifies_and_the_gate_accepts_it(
    format_1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = load_bundle(format_1)
    assert bundle.records is None and verify_bundle(bundle) == []
    assert bundle.record_name("AC-10") == "AC-10.json"
    records = read_records(bundle)
    assert [judge(records[ac]).label for ac in ("AC-10", "AC-11")] == ["PASSED · QUALIFYING"] * 2
    code, lines, _ = gate(capsys, *_format_1_gate(format_1, tmp_path / "PR.md"))
    assert (code, lines) == (0, ["specgate gate: accepted AC-10, AC-11"])


def test_a_format_1_record_edited_after_writing_is_still_caught(
    format_1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = format_1 / "AC-10.json"
    path.write_text(path.read_text().replace('"value":1.52', '"value":1.92'))
    code, lines, _ = gate(capsys, *_format_1_gate(format_1, tmp_path / "PR.md"))
    assert code == 1 and "AC-10.json: sha256" in lines[0]


def test_render_prints_a_format_1_bundle_as_its_writer_did(
    format_1: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, configure_render_parser, run_render, str(format_1))
    assert (code, err) == (0, "") and out == (format_1 / "evidence.md").read_text()


def test_merge_turns_a_format_1_bundle_into_format_2_holding_the_same_records(
    format_1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merged = tmp_path / "merged"
    code, _, err = cli(capsys, configure_merge_parser, run_merge, str(format_1), f"--out={merged}")
    assert (code, err) == (0, "")
    bundle = load_bundle(merged)
    assert sorted(bundle.records or {}) == ["AC-10", "AC-11"] and verify_bundle(bundle) == []
    for ac in ("AC-10", "AC-11"):
        assert ac_record(merged, ac) == json.loads((format_1 / f"{ac}.json").read_text())
    runs = json.loads((merged / "run.json").read_text())["runs"]
    assert list(runs) == [json.loads((format_1 / "manifest.json").read_text())["run_id"]]
    code, lines, _ = gate(capsys, *_format_1_gate(merged, tmp_path / "PR.md"))
    assert (code, lines) == (0, ["specgate gate: accepted AC-10, AC-11"])


def test_a_format_1_bundle_of_main_is_signed_and_its_signature_verifies(
    format_1: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    desk = pem_key(keys, "desk-m4")
    policy = load_policy(write_policy(tmp_path, {"desk-m4": (desk, ["m4-16gb"])})).trust
    assert policy is not None
    signed = sign_bundle(format_1, load_signing_key(desk.path, {}), build_redactor(None))
    assert "AC-10.json" in signed.statement.files
    assert not any("#" in name for name in signed.statement.files)
    trust = judge_bundle(format_1, policy, NOW)
    assert trust.problem is None and trust.commit == FORMAT_1_COMMIT


def _reseal_records(bundle: Path, lines: list[bytes], *, line_entries: bool = True) -> None:
    """Rewrite ``records.jsonl`` as ``lines`` and reseal the manifest around it as an author could:
    the file's entry, the lines' entries (each line's own digest in AC order; ``line_entries=False``
    keeps the listed ones) and the bundle digest."""
    from pytest_specgate.evidence._bundle import FileEntry, file_entry, manifest_document

    data = b"".join(lines)
    (bundle / "records.jsonl").write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    files = {name: FileEntry(**entry) for name, entry in manifest["files"].items()}
    files["records.jsonl"] = file_entry(data)
    listed = {ac: FileEntry(**entry) for ac, entry in manifest["records"].items()}
    records = dict(zip(sorted(listed), map(file_entry, lines), strict=True)) if line_entries else listed
    rewritten = manifest_document(manifest["run_id"], files, manifest["specgate"], records)
    (bundle / "manifest.json").write_text(pretty_json(rewritten))


def test_a_line_changed_with_only_the_file_entry_resealed_is_named(git_repo: GitRepo) -> None:
    """The manifest lists every line's digest besides the file's: rewriting the file's entry
    around an edited line still leaves the line's own entry to name it."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    lines = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    assert b'"value":1.52' in lines[0]
    _reseal_records(written.path, [lines[0].replace(b'"value":1.52', b'"value":1.92'), lines[1]],
                    line_entries=False)
    problems = verify_bundle(load_bundle(written.path))
    assert len(problems) == 1 and problems[0].startswith("records.jsonl#AC-10: sha256 "), problems


def test_a_line_moved_to_another_ac_is_refused(git_repo: GitRepo) -> None:
    """Lines are in AC order under the manifest's digests: swapping two lines (and their entries)
    makes each line the record of the other AC, which the reader refuses."""
    from pytest_specgate.evidence._bundle import BundleError

    written = qualifying_bundle(git_repo.path, TEST_ENV)
    first, second = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    _reseal_records(written.path, [second, first])
    bundle = load_bundle(written.path)
    assert verify_bundle(bundle) == []
    with pytest.raises(BundleError, match=r"records.jsonl#AC-10: the line is the record of AC-11"):
        read_records(bundle)


def test_a_line_naming_a_text_its_run_does_not_hold_is_refused(git_repo: GitRepo) -> None:
    """Reasons and host lines are indexes into the run's ``texts``: one past its end is one
    line naming the record, never a traceback."""
    from pytest_specgate.evidence._bundle import BundleError

    written = qualifying_bundle(git_repo.path, TEST_ENV)
    first, second = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    assert b'"host":{"summary":0}' in first
    _reseal_records(written.path, [first.replace(b'"host":{"summary":0}', b'"host":{"summary":99}'), second])
    bundle = load_bundle(written.path)
    assert verify_bundle(bundle) == []
    with pytest.raises(BundleError, match=r"records.jsonl#AC-10: host.summary: names text 99, which its run"):
        read_records(bundle)


SPEEDUP = "acceptance/test_ac10.py::test_speedup"
HARDWARE = {"matched": True, "reasons": [], "profile": "m4-16gb", "requirement": {"apple": "M4"},
            "host_summary": "Apple M4, 16 GB"}


def _one_test_bundle(repo: Path) -> WrittenBundle:
    """AC-10 with one test and one measurement (1.52x, at least 1.4x), on matched hardware."""
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder(SPEEDUP)
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    run.run_test(SPEEDUP, AC10, recorder=recorder, hardware=HARDWARE)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


def test_a_line_leaves_out_what_its_reader_derives_and_the_reader_gives_it_back(git_repo: GitRepo) -> None:
    """A row's verdict, the node id of an AC's only test and a test's host line (an index into the
    run's texts) are not in the line; the record read back holds them as the collector built them,
    and is judged as the whole record is."""
    written = _one_test_bundle(git_repo.path)
    line = json.loads(record_line(written.path, "AC-10"))
    assert line["measurements"] == [{"name": "median_speedup", "value": 1.52, "unit": "x", "at_least": 1.4,
                                     "at_most": None, "decide": "point"}]
    assert isinstance(line["tests"][0]["hardware"]["host_summary"], int)
    record = read_records(load_bundle(written.path))["AC-10"]
    [row] = record.document["measurements"]
    assert (row["nodeid"], row["passed"], row["verdict"]) == (SPEEDUP, True, "passed")
    assert record.document["tests"][0]["hardware"] == HARDWARE
    whole = AcRecord.from_json(json.loads(json.dumps(record.document)), "the whole record")
    assert judge(record) == judge(whole)
    assert judge(record).outcome == "passed"


def test_split_and_join_give_back_records_of_one_test_and_of_several(git_repo: GitRepo) -> None:
    """A record of several tests keeps each row's node id (which test measured it); one of one
    test leaves it out; both join back to the record they were split from."""
    several = ac_record(qualifying_bundle(git_repo.path, TEST_ENV).path, "AC-10")
    one = ac_record(_one_test_bundle(git_repo.path).path, "AC-10")
    assert len(several["tests"]) == 2 and len(one["tests"]) == 1
    for document in (several, one):
        split = split_records([json.loads(json.dumps(document))])
        [(_, line)] = split.lines
        assert ("nodeid" in line["measurements"][0]) == (document is several)
        runs = {key: RunFacts(facts) for key, facts in split.runs.items()}
        assert join_record(line, runs[line["run_facts"]]) == document


def test_a_row_whose_value_was_edited_is_judged_from_its_value(git_repo: GitRepo) -> None:
    """The line holds no verdict to trust: a value below its bound, resealed, reads back failed."""
    written = _one_test_bundle(git_repo.path)
    first, second = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    _reseal_records(written.path, [first.replace(b'"value":1.52', b'"value":1.2'), second])
    bundle = load_bundle(written.path)
    assert verify_bundle(bundle) == []
    record = read_records(bundle)["AC-10"]
    [row] = record.document["measurements"]
    assert (row["passed"], row["verdict"]) == (False, "failed")
    assert judge(record).outcome == "failed"


@pytest.mark.parametrize("verdict", [b'"passed":true,', b'"verdict":"passed",'])
def test_a_line_carrying_a_row_verdict_is_refused(git_repo: GitRepo, verdict: bytes) -> None:
    written = _one_test_bundle(git_repo.path)
    first, second = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    forged = first.replace(b'"value":1.52', verdict + b'"value":1.2')
    assert forged != first
    _reseal_records(written.path, [forged, second])
    bundle = load_bundle(written.path)
    assert verify_bundle(bundle) == []
    with pytest.raises(BundleError, match=r"records.jsonl#AC-10: not a valid record line: measurements/0: "):
        read_records(bundle)


def test_a_row_without_a_node_id_in_an_ac_of_several_tests_is_refused(git_repo: GitRepo) -> None:
    """Which of two tests measured a row is not derivable: a line leaving it out names no test."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    first, second = (written.path / "records.jsonl").read_bytes().splitlines(keepends=True)
    named = f'"name":"median_speedup","nodeid":"{SPEEDUP}",'.encode()
    assert first.count(named) == 1
    _reseal_records(written.path, [first.replace(named, b'"name":"median_speedup",'), second])
    bundle = load_bundle(written.path)
    assert verify_bundle(bundle) == []
    refused = r"#AC-10: measurements\[0\]: names no test, and the line holds 2 tests"
    with pytest.raises(BundleError, match=refused):
        read_records(bundle)
