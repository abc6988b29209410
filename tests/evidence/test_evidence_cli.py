from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import evidence_testkit
import pytest
from evidence_testkit import (
    AC10,
    AC11,
    PLANTED_HF_TOKEN,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    ac_record,
    cli,
    git,
    qualifying_bundle,
    reseal_bundle,
    write_records,
)

from pytest_specgate.evidence import WrittenBundle, load_bundle, parse_pr_body, verify_bundle
from pytest_specgate.evidence._bundle import FileEntry, file_entry, record_lines
from pytest_specgate.evidence._record_split import RECORDS_NAME
from pytest_specgate.evidence.cli_commands import (
    configure_compare_parser,
    configure_gate_parser,
    configure_merge_parser,
    configure_render_parser,
    configure_waivers_parser,
    run_compare,
    run_gate,
    run_merge,
    run_render,
    run_waivers,
)


def _host_run(repo: Path, ac10_passes: bool, ac11_passes: bool) -> WrittenBundle:
    """One host's run: only the AC its hardware matches passes; the other skips."""
    run = SyntheticRun(repo, TEST_ENV)
    run.run_test(
        "acceptance/test_ac10.py::test_speedup", AC10, outcome="passed" if ac10_passes else "skipped"
    )
    run.run_test(
        "acceptance/test_ac11.py::test_small_air", AC11, outcome="passed" if ac11_passes else "skipped"
    )
    return run.finish()


def test_render_prints_the_bundle_markdown(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    code, out, _ = cli(capsys, configure_render_parser, run_render, str(written.path))
    assert code == 0 and out == written.markdown
    code, out, _ = cli(capsys, configure_render_parser, run_render, str(git_repo.path / "out"))
    assert code == 0 and out == written.markdown


def test_render_refuses_a_tampered_or_ambiguous_bundle(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    qualifying_bundle(git_repo.path, TEST_ENV)
    code, _, err = cli(capsys, configure_render_parser, run_render, str(git_repo.path / "out"))
    assert code == 2 and "expected one bundle, found 2" in err
    (written.path / "records.jsonl").write_text("{}")
    code, _, err = cli(capsys, configure_render_parser, run_render, str(written.path))
    assert code == 2 and "bundle does not match its manifest: records.jsonl: sha256" in err


def test_merge_combines_hosts_and_the_gate_accepts_the_merged_bundle(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m4 = _host_run(git_repo.path, ac10_passes=True, ac11_passes=False)
    m1 = _host_run(git_repo.path, ac10_passes=False, ac11_passes=True)
    merged = tmp_path / "merged"
    code, out, _ = cli(
        capsys, configure_merge_parser, run_merge, str(m4.path), str(m1.path), "--out", str(merged)
    )
    bundle = load_bundle(merged)
    assert (code, out.splitlines()) == (0, [
        f"AC-10: kept run {m4.path.name} (passed, qualifying) over run {m1.path.name} (skipped, not "
        "qualifying): a passing, qualifying record wins over a passing one, which wins over the rest",
        f"AC-11: kept run {m1.path.name} (passed, qualifying) over run {m4.path.name} (skipped, not "
        "qualifying): a passing, qualifying record wins over a passing one, which wins over the rest",
        f"specgate merge: wrote {merged} (2 AC, bundle-sha256 {bundle.digest})",
    ])
    assert verify_bundle(bundle) == []
    assert set(bundle.files) == set(load_bundle(m4.path).files) | {"merge.json"}
    statement = json.loads((merged / "statement.intoto.json").read_text())
    assert statement["subject"] == [{"name": "source", "digest": {"gitCommit": git_repo.commit}}]
    receipt = json.loads((merged / "receipt.json").read_text())
    assert (receipt["status"], receipt["verdict"], receipt["tests_finished"]) == ("merged", "QUALIFIED", 2)
    assert ac_record(merged, "AC-10") == ac_record(m4.path, "AC-10")
    assert ac_record(merged, "AC-11") == ac_record(m1.path, "AC-11")
    runs = json.loads((merged / "run.json").read_text())["runs"]
    assert sorted(runs) == sorted((m4.path.name, m1.path.name))
    for run, kept in ((m4, "AC-10"), (m1, "AC-11")):
        source = json.loads((run.path / "run.json").read_text())["runs"][run.path.name]
        carriers = {test: ac for test, ac in source["census"]["carriers"].items() if ac == kept}
        texts = runs[run.path.name]["texts"]
        assert set(texts) <= set(source["texts"])
        assert runs[run.path.name] == {**source, "census": {**source["census"], "carriers": carriers},
                                       "texts": texts}
    sources = json.loads((merged / "merge.json").read_text())["sources"]
    assert sorted((s["run_id"], tuple(s["acs"])) for s in sources) == sorted(
        [(m4.path.name, ("AC-10",)), (m1.path.name, ("AC-11",))]
    )
    markdown = (merged / "evidence.md").read_text()
    assert {b.bundle_sha256 for b in parse_pr_body(markdown, "evidence.md")} == {bundle.digest}
    body = tmp_path / "PR.md"
    body.write_text(markdown)
    code, out, _ = cli(
        capsys,
        configure_gate_parser,
        run_gate,
        "--pr-body",
        str(body),
        "--evidence",
        str(merged),
        "--require",
        "AC-10",
        "--require",
        "AC-11",
        "--commit",
        git_repo.commit,
    )
    assert (code, out) == (
        0,
        f"specgate gate: policy specgate.policy/1; commit {git_repo.commit} (from --commit)\n"
        "specgate gate: accepted AC-10, AC-11\n",
    )


def test_merge_refuses_two_qualifying_records_and_an_existing_output(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = qualifying_bundle(git_repo.path, TEST_ENV)
    second = qualifying_bundle(git_repo.path, TEST_ENV)
    code, _, err = cli(
        capsys,
        configure_merge_parser,
        run_merge,
        str(first.path),
        str(second.path),
        "--out",
        str(tmp_path / "m"),
    )
    assert code == 2 and "AC-10 has qualifying evidence in both" in err
    code, _, err = cli(capsys, configure_merge_parser, run_merge, str(first.path), "--out", str(first.path))
    assert code == 2 and "already exists" in err


def test_merge_refuses_bundles_of_different_commits_unless_told(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m4 = _host_run(git_repo.path, ac10_passes=True, ac11_passes=False)
    (git_repo.path / "spec.py").write_text("SPEC = 29\n")
    git(git_repo.path, "commit", "-qam", "later")
    later = git(git_repo.path, "rev-parse", "HEAD")
    m1 = _host_run(git_repo.path, ac10_passes=False, ac11_passes=True)
    merged = tmp_path / "merged"
    code, out, err = cli(capsys, configure_merge_parser, run_merge, str(m4.path), str(m1.path),
                         f"--out={merged}")
    assert (code, out) == (2, "")
    assert err == (
        f"specgate merge: error: bundles are for different commits ({git_repo.commit} in run "
        f"{m4.path.name}; {later} in run {m1.path.name}): merge runs of one commit, or pass "
        "--allow-mixed-commits\n"
    )
    assert not merged.exists()
    code, out, _ = cli(capsys, configure_merge_parser, run_merge, str(m4.path), str(m1.path),
                       f"--out={merged}", "--allow-mixed-commits")
    assert code == 0
    commits = ", ".join(sorted([git_repo.commit, later]))
    assert (f"specgate merge: warning: no in-toto statement: the records are for 2 commit(s) ({commits}) "
            "and a statement names one known commit") in out.splitlines()
    assert verify_bundle(load_bundle(merged)) == []
    assert not (merged / "statement.intoto.json").exists()


def test_merge_of_equal_records_keeps_the_first_and_says_so(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _host_run(git_repo.path, ac10_passes=False, ac11_passes=False)
    second = _host_run(git_repo.path, ac10_passes=False, ac11_passes=False)
    code, out, _ = cli(capsys, configure_merge_parser, run_merge, str(first.path), str(second.path),
                       f"--out={tmp_path / 'm'}")
    assert code == 0
    assert out.splitlines()[0] == (
        f"AC-10: kept run {first.path.name} (skipped, not qualifying) over run {second.path.name} "
        "(skipped, not qualifying): equal standing, the first bundle given wins"
    )


def test_waivers_lists_open_waivers_and_flags_due_ones(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test(
        "acceptance/test_ac10.py::test_speedup", AC10 | {"waived_to": "PR-C", "reason": "no M4 in CI"}
    )
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11 | {"waived_to": "PR-B", "reason": "no M1"})
    written = run.finish()
    code, out, _ = cli(capsys, configure_waivers_parser, run_waivers, str(written.path))
    assert code == 0
    assert out.splitlines() == [
        f"AC-10 waived → PR-C, because no M4 in CI [run {written.path.name}]",
        f"AC-11 waived → PR-B, because no M1 [run {written.path.name}]",
    ]
    pyproject = git_repo.path / "pyproject.toml"
    pyproject.write_text('[tool.specgate]\ngates = ["PR-A", "PR-B", "PR-C"]\n')
    declared = f"--pyproject={pyproject}"
    code, out, _ = cli(
        capsys, configure_waivers_parser, run_waivers, str(written.path), "--gate=PR-B", declared
    )
    assert code == 1 and out.splitlines()[1].endswith("(DUE: this is gate PR-B)")
    assert "DUE" not in out.splitlines()[0]
    code, _, err = cli(
        capsys, configure_waivers_parser, run_waivers, str(written.path), "--gate=PR-2", declared
    )
    assert code == 2
    assert err == (
        f"specgate waivers: error: --gate: PR-2 is not a declared gate; {pyproject} declares "
        "[tool.specgate] gates = PR-A, PR-B, PR-C\n"
    )


def test_waivers_without_any(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    assert cli(capsys, configure_waivers_parser, run_waivers, str(written.path))[:2] == (0, "no waivers\n")


def test_waivers_json(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10 | {"waived_to": "PR-B", "reason": "no M4"})
    written = run.finish()
    pyproject = git_repo.path / "pyproject.toml"
    pyproject.write_text('[tool.specgate]\ngates = ["PR-A", "PR-B"]\n')
    code, out, _ = cli(capsys, configure_waivers_parser, run_waivers, str(written.path), "--gate=PR-B",
                       f"--pyproject={pyproject}", "--json")
    assert code == 1 and json.loads(out) == {
        "schema": "specgate.waivers/1",
        "gate": "PR-B",
        "waivers": [
            {"ac": "AC-10", "to": "PR-B", "reason": "no M4", "runs": [written.path.name], "due": True}
        ],
        "due": ["AC-10"],
    }


def test_render_and_merge_json(git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    code, out, _ = cli(capsys, configure_render_parser, run_render, str(written.path), "--json")
    rendered = json.loads(out)
    assert code == 0 and rendered["schema"] == "specgate.render/1"
    assert rendered["markdown"] == written.markdown
    assert (rendered["run_id"], rendered["bundle_sha256"]) == (written.path.name, written.digest)
    assert [(ac["ac"], ac["verdict"]) for ac in rendered["acs"]] == [
        ("AC-10", "PASSED · QUALIFYING"), ("AC-11", "PASSED · QUALIFYING")
    ]
    assert rendered["acs"][0]["digest_line"] in written.markdown
    merged = tmp_path / "merged"
    code, out, _ = cli(capsys, configure_merge_parser, run_merge, str(written.path), f"--out={merged}",
                       "--json")
    result = json.loads(out)
    assert code == 0 and result["schema"] == "specgate.merge-result/1"
    assert (result["bundle_sha256"], result["warning"]) == (load_bundle(merged).digest, None)
    assert [(ac["ac"], ac["kept_run"]) for ac in result["acs"]] == [
        ("AC-10", written.path.name), ("AC-11", written.path.name)
    ]


@pytest.mark.parametrize("options", [(), ("--json",)], ids=["markdown", "json"])
def test_render_redacts_a_secret_a_forged_record_holds_and_leaves_clean_records_as_written(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    out = tmp_path / "rendered.md"
    assert cli(capsys, configure_render_parser, run_render, str(written.path), f"--out={out}")[0] == 0
    assert out.read_text() == written.markdown
    assert cli(capsys, configure_render_parser, run_render, str(written.path), *options)[1] != ""

    def plant(record: dict[str, Any]) -> None:
        record["ac"]["title"] = f"canary with {PLANTED_HF_TOKEN}"

    markdown = reseal_bundle(written.path, {"AC-10": plant})
    assert PLANTED_HF_TOKEN in markdown
    code, shown, _ = cli(capsys, configure_render_parser, run_render, str(written.path), *options)
    assert code == 0 and PLANTED_HF_TOKEN not in shown and "canary with <" in shown
    assert cli(capsys, configure_render_parser, run_render, str(written.path), f"--out={out}")[0] == 0
    assert PLANTED_HF_TOKEN not in out.read_text()


def test_merge_redacts_a_secret_a_forged_record_holds(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    clean = tmp_path / "clean"
    assert cli(capsys, configure_merge_parser, run_merge, str(written.path), "--out", str(clean))[0] == 0
    assert (clean / "records.jsonl").read_bytes() == (written.path / "records.jsonl").read_bytes()

    def plant(record: dict[str, Any]) -> None:
        record["tests"][0]["message"] = f"token {PLANTED_HF_TOKEN} in a log line"

    reseal_bundle(written.path, {"AC-10": plant})
    assert PLANTED_HF_TOKEN.encode() in (written.path / "records.jsonl").read_bytes()
    merged = tmp_path / "merged"
    code, _, err = cli(capsys, configure_merge_parser, run_merge, str(written.path), "--out", str(merged))
    assert (code, err) == (0, "")
    for path in merged.rglob("*"):
        assert path.is_dir() or PLANTED_HF_TOKEN.encode() not in path.read_bytes(), path
    assert b"token <" in (merged / "records.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("spec", "title"),
    [("SPEC-028", "db password:\nhunter2x")],
    ids=["a line break the markdown flattens"],
)
def test_render_redacts_a_secret_that_only_the_markdown_puts_on_one_line(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str], spec: str, title: str
) -> None:
    """No string of the record is redacted alone (the keyword rule reads one line), but the
    rendered ``- Criterion: db password: hunter2x (spec SPEC-028)`` is: render must not print it
    as it is."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)

    def plant(record: dict[str, Any]) -> None:
        record["ac"]["spec"], record["ac"]["title"] = spec, title

    assert "password: hunter2x" in reseal_bundle(written.path, {"AC-10": plant})
    code, shown, _ = cli(capsys, configure_render_parser, run_render, str(written.path))
    assert code == 0 and "password: <" in shown and "hunter2x" not in shown


def test_merge_and_waivers_print_a_forged_run_id_or_reason_on_its_own_line(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bundle's run id and a waiver's reason are the author's text: a line break in them must not
    start a line of the command's output (a CI runner reads ``::error::`` there as a command)."""
    run = SyntheticRun(git_repo.path, TEST_ENV)
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10 | {"waived_to": "PR-C", "reason": "no M4"})
    written = run.finish()
    manifest = json.loads((written.path / "manifest.json").read_text())
    manifest["run_id"] = "r1\n::error::forged run"
    (written.path / "manifest.json").write_text(json.dumps(manifest))

    def forge_reason(record: dict[str, Any]) -> None:
        for waived in (record["waiver"], record["tests"][0]["waiver"]):
            waived["reason"] = "no M4\r::error::forged reason"

    reseal_bundle(written.path, {"AC-10": forge_reason})
    code, out, _ = cli(capsys, configure_merge_parser, run_merge, str(written.path), "--out",
                       str(tmp_path / "merged"))
    assert code == 0 and out.splitlines()[0].startswith("AC-10: kept run r1\\n::error::forged run (")
    code, out, _ = cli(capsys, configure_waivers_parser, run_waivers, str(written.path))
    assert code == 0 and out.splitlines() == [
        "AC-10 waived → PR-C, because no M4\\r::error::forged reason [run r1\\n::error::forged run]"
    ]


def test_render_and_compare_redact_a_secret_a_forged_run_id_holds(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run id is the manifest's, not a record's: the check that lets clean records through
    unredacted must read it too (render --json and compare print it)."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    manifest = json.loads((written.path / "manifest.json").read_text())
    manifest["run_id"] = f"run-{PLANTED_HF_TOKEN}"
    (written.path / "manifest.json").write_text(json.dumps(manifest))
    reseal_bundle(written.path, {})
    out = tmp_path / "rendered.json"
    render = (configure_render_parser, run_render, str(written.path))
    assert cli(capsys, *render, "--json", f"--out={out}")[0] == 0
    assert PLANTED_HF_TOKEN not in out.read_text() and "run-<" in out.read_text()
    for options in ((), ("--json",)):
        compare = (configure_compare_parser, run_compare, str(written.path), str(written.path))
        code, shown, _ = cli(capsys, *compare, *options)
        assert code == 0 and PLANTED_HF_TOKEN not in shown and "run-<" in shown


def test_a_token_escaped_in_the_raw_record_line_is_read_decoded_and_never_passes_through(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``\\u0068f_...`` in records.jsonl's bytes is ``hf_...`` to every reader: the clean check reads
    decoded strings and keys, and merge writes the documents it parsed, never the line's bytes."""
    written = qualifying_bundle(git_repo.path, TEST_ENV)
    escaped = ("\\u0068" + PLANTED_HF_TOKEN[1:]).encode()

    def escape_in_bytes(bundle: Path, documents: Any) -> dict[str, FileEntry]:
        write_records(bundle, documents)
        data = (bundle / RECORDS_NAME).read_bytes().replace(b"MARK", escaped)
        (bundle / RECORDS_NAME).write_bytes(data)
        lines = zip(("AC-10", "AC-11"), record_lines(data), strict=True)
        return {ac_id: file_entry(line) for ac_id, line in lines}

    def plant(record: dict[str, Any]) -> None:
        record["tests"][0]["message"] = "token MARK in a log line"
        record["tests"][0]["notes"] = {"MARK": 1}

    monkeypatch.setattr(evidence_testkit, "write_records", escape_in_bytes)
    reseal_bundle(written.path, {"AC-10": plant}, rerender=False)
    assert escaped in (written.path / RECORDS_NAME).read_bytes()
    merged = tmp_path / "merged"
    assert cli(capsys, configure_merge_parser, run_merge, str(written.path), "--out", str(merged))[0] == 0
    for path in merged.rglob("*"):
        assert path.is_dir() or PLANTED_HF_TOKEN[1:].encode() not in path.read_bytes(), path
    for configure, run, arguments in [(configure_render_parser, run_render, ("--json",)),
                                      (configure_compare_parser, run_compare, (str(written.path), "--json"))]:
        code, shown, _ = cli(capsys, configure, run, str(written.path), *arguments)
        assert code == 0 and PLANTED_HF_TOKEN[1:] not in shown
