"""The judge commands' output skips the line pass only for what was read clean.

``specgate`` passes every printed line through the credential rules (``cli.redacted_output``);
at 10,000 ACs that pass read megabytes of lines built from record strings the command had found
clean already (``records_read_clean``). Those lines now pass as they are; everything else (a
record not read clean, a path, PR body text, an error) still takes the pass. Honest bundles
print exactly what they printed before; a planted secret is never printed.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from evidence_testkit import (
    AC10,
    AC11,
    PLANTED_HF_TOKEN,
    TEST_ENV,
    GitRepo,
    SyntheticRun,
    reseal_bundle,
)

from pytest_specgate import cli
from pytest_specgate.evidence import WrittenBundle, load_bundle, read_records
from pytest_specgate.evidence._redact import build_redactor
from pytest_specgate.evidence._redacted_output import RedactedLines, write_cleared
from pytest_specgate.evidence._schema import schema_problems
from pytest_specgate.evidence.cli_commands import records_read_clean

REDACTOR = build_redactor(None)


def _stream() -> tuple[RedactedLines, io.StringIO]:
    target = io.StringIO()
    return RedactedLines(target, lambda: REDACTOR.secrets_only().text), target


def test_cleared_text_passes_as_it_is_and_other_writes_are_still_redacted() -> None:
    stream, target = _stream()
    write_cleared(stream, "AC-10: not qualifying\n")
    stream.write(f"error: {PLANTED_HF_TOKEN}\n")
    assert target.getvalue().splitlines() == ["AC-10: not qualifying", "error: <HF_TOKEN>"]


@pytest.mark.parametrize(
    "writes",
    [[("plain", "db password: "), ("cleared", "hunter2x\n")],
     [("cleared", "db password: "), ("plain", "hunter2x\n")],
     [("cleared", "ok\ndb password: "), ("plain", "hunter2x\n")]],
    ids=["cleared text ends a line begun by a plain write", "a plain write ends a cleared line",
         "a cleared line's unfinished tail"],
)
def test_a_line_mixing_cleared_and_plain_text_is_redacted_whole(writes: list[tuple[str, str]]) -> None:
    """Only whole lines skip the pass: a keyword in one write and its value in the next is one
    line, which the rule reads whole."""
    stream, target = _stream()
    for kind, text in writes:
        (stream.write_cleared if kind == "cleared" else stream.write)(text)
    stream.flush()
    assert "hunter2x" not in target.getvalue() and "password: <" in target.getvalue()


def test_write_cleared_on_a_plain_stream_writes_plainly() -> None:
    target = io.StringIO()
    write_cleared(target, "AC-10\n")
    assert target.getvalue() == "AC-10\n"


def _strings_of(node: object, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], bool]]:
    """Every string of a JSON document: ``(path, is_key)``; a key's path ends with the key."""
    if isinstance(node, str):
        yield path, False
    elif isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key), True
            yield from _strings_of(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings_of(value, (*path, index))


def _planted(document: Any, path: tuple[Any, ...], is_key: bool) -> Any:
    """A copy of ``document`` with the token added to the string (or key) at ``path``."""
    if not path:
        return f"{document} {PLANTED_HF_TOKEN}"
    head, rest = path[0], path[1:]
    if isinstance(document, list):
        return [_planted(item, rest, is_key) if at == head else item for at, item in enumerate(document)]
    if is_key and not rest:
        return {(f"{key} {PLANTED_HF_TOKEN}" if key == head else key): item for key, item in document.items()}
    return {key: _planted(item, rest, is_key) if key == head else item for key, item in document.items()}


def _engine_bundle(repo: Path, **options: Any) -> WrittenBundle:
    """AC-10 on the mock engine (so the gate prints its tests' reasons), AC-11 passing, a
    measurement with a unit, a note, an attachment."""
    run = SyntheticRun(repo, TEST_ENV, **options)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "mock", "model": "specgate-mock-target"})
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    recorder.attach("server.log", b"boot ok\n")
    recorder.note("tuning", {"gamma": "4"})
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    return run.finish()


def test_every_string_of_a_record_is_read_by_the_clean_check(git_repo: GitRepo) -> None:
    """The check lets a command print lines built from a record without the line pass; so a
    secret in any string of the record, key or value, run facts too, must make it say no."""
    written = _engine_bundle(git_repo.path)
    record = read_records(load_bundle(written.path))["AC-10"]
    assert records_read_clean(REDACTOR, [record])
    places = list(_strings_of(record.document))
    assert len(places) > 100
    for path, is_key in places:
        planted = dataclasses.replace(record, document=_planted(record.document, path, is_key))
        assert not records_read_clean(REDACTOR, [planted]), path
    assert not records_read_clean(REDACTOR, [record], ["the defaults", f"run-{PLANTED_HF_TOKEN}"])


def _specgate(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    """``specgate ARGUMENTS`` through :func:`cli.main`, output redaction and all: exit code and
    stdout and stderr together."""
    code = cli.main(list(arguments))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _commands(written: WrittenBundle, git_repo: GitRepo, tmp_path: Path) -> dict[str, list[str]]:
    body = tmp_path / "PR.md"
    body.write_text("## Summary\n\n" + (written.path / "evidence.md").read_text())
    bundle = str(written.path)
    return {
        "gate": ["gate", f"--pr-body={body}", f"--evidence={bundle}", f"--commit={git_repo.commit}"],
        "gate trusted": ["gate", f"--pr-body={body}", f"--evidence={bundle}", f"--commit={git_repo.commit}",
                         f"--trusted-config={_trusted_toml(tmp_path, 'trusted.toml').name}"],
        "render": ["render", bundle],
        "render json": ["render", bundle, "--json"],
        "merge": ["merge", bundle, f"--out={tmp_path / 'merged'}"],
        "compare": ["compare", bundle, bundle],
        "compare json": ["compare", bundle, bundle, "--json"],
        "waivers": ["waivers", bundle],
    }


def _trusted_toml(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text('[tool.specgate.hosts.m4-16gb]\napple = "M4"\nmin_memory_gb = 16\n\n'
                    '[tool.specgate.acs."AC-10"]\nprofile = "m4-16gb"\nbackends = ["vllm"]\n')
    return path


class _CountedLines:
    """The output redactor, counting the lines it is handed."""

    def __init__(self) -> None:
        self.lines = 0

    def __call__(self) -> Callable[[str], str]:
        redact = build_redactor(None).secrets_only().text

        def counted(line: str) -> str:
            self.lines += 1
            return redact(line)

        return counted


@pytest.mark.parametrize("command", ["gate", "gate trusted", "render", "render json", "merge", "compare",
                                     "compare json"])
def test_a_clean_bundle_prints_what_the_line_pass_printed_and_skips_it(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """The same output as through the line pass (forced by a check that never finds a bundle
    clean), with fewer lines read. The trusted config is named relative to the working
    directory: a path naming this user (``/tmp/pytest-of-USER``) is not clean, rightly."""
    monkeypatch.chdir(tmp_path)
    written = _engine_bundle(git_repo.path, diagnostic=True)
    arguments = _commands(written, git_repo, tmp_path)[command]
    counted = _CountedLines()
    monkeypatch.setattr(cli, "_output_redactor", counted)
    cleared = _specgate(capsys, *arguments)
    skipped = counted.lines
    counted.lines = 0
    monkeypatch.setattr("pytest_specgate.evidence.cli_commands.records_read_clean", lambda *_: False)
    if command == "merge":  # a new folder, and a new receipt's time: the digest of what it wrote differs
        arguments[-1] += "-again"
    passed = _specgate(capsys, *arguments)
    if command == "merge":
        cleared, passed = (_without_digest(cleared), _without_digest(passed))
    assert cleared == passed
    assert cleared[1].count("\n") > 2
    assert skipped < counted.lines, (skipped, counted.lines)


def _without_digest(result: tuple[int, str]) -> tuple[int, str]:
    code, shown = result
    return code, re.sub(r"merged(-again)? \(2 AC, bundle-sha256 .*\)", "merged (2 AC)", shown)


def _plant_everywhere(record: dict[str, Any]) -> None:
    """The token in every string of the record the schema lets its author choose freely, keys of
    free-form objects too (each kept only where the record stays valid)."""
    for path, is_key in list(_strings_of(record)):
        if path[0] in {"schema", "ac"} or (path and path[-1] in {"outcome", "mode", "backend"}):
            continue
        try:
            planted = _planted(record, path, is_key)
        except (KeyError, IndexError, TypeError):
            continue
        if not schema_problems(planted):
            record.clear()
            record.update(planted)
    record["ac"]["title"] += f" {PLANTED_HF_TOKEN}"


def _forged_bundle(repo: Path, where: str) -> WrittenBundle:
    """AC-10 waived, on the mock engine, one test failing, with the token planted ``where``."""
    run = SyntheticRun(repo, TEST_ENV)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.note_engine({"backend": "mock", "model": "specgate-mock-target"})
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    waived = AC10 | {"waived_to": "PR-C", "reason": "no M4"}
    run.run_test("acceptance/test_ac10.py::test_speedup", waived, recorder=recorder)
    run.run_test("acceptance/test_ac10.py::test_failing", waived, outcome="failed", message="assert 1 == 2")
    written = run.finish()

    def forge(record: dict[str, Any]) -> None:
        if where == "every string":
            _plant_everywhere(record)
        elif where == "one test's node id":
            record["tests"][0]["nodeid"] += PLANTED_HF_TOKEN
            record["measurements"][0]["nodeid"] += PLANTED_HF_TOKEN
        elif where == "one test's message":
            [failed] = [test for test in record["tests"] if test["outcome"] == "failed"]
            failed["message"] = f"failed with {PLANTED_HF_TOKEN}"

    if where == "the run id":
        manifest = written.path / "manifest.json"
        manifest.write_text(manifest.read_text().replace(written.path.name, f"run-{PLANTED_HF_TOKEN}"))
    reseal_bundle(written.path, {"AC-10": forge})
    return written


PRINTED = {
    "every string": ["gate", "gate trusted", "render", "render json", "compare", "compare json", "waivers"],
    "one test's node id": ["gate", "gate trusted", "render", "render json", "compare", "compare json"],
    "one test's message": ["gate", "gate trusted"],
    "the run id": ["render json", "merge", "compare", "compare json", "waivers"],
    "the trusted config's path": ["gate trusted"],
    "a line of the pasted block": ["gate", "gate trusted"],
}
"""Where each command prints the planted string when nothing redacts (checked by the test)."""


@pytest.mark.parametrize(("where", "command"), [(where, command) for where, commands in PRINTED.items()
                                                for command in commands])
def test_a_planted_secret_is_never_printed(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    where: str, command: str,
) -> None:
    """First with nothing redacting (the output's line pass a no-op, every bundle found clean):
    the command does print the string; then as shipped: it never does."""
    monkeypatch.chdir(tmp_path)
    written = _forged_bundle(git_repo.path, where)
    arguments = _commands(written, git_repo, tmp_path)[command]
    if where == "the trusted config's path":
        arguments[-1] = f"--trusted-config={_trusted_toml(tmp_path, f'{PLANTED_HF_TOKEN}.toml').name}"
    if where == "a line of the pasted block":  # the gate quotes the PR body's line it did not expect
        body = tmp_path / "PR.md"
        body.write_text(body.read_text().replace("- Commit: ", f"- Commit: {PLANTED_HF_TOKEN} ", 1))
    with monkeypatch.context() as unredacted:
        unredacted.setattr(cli, "_output_redactor", lambda: lambda line: line)
        unredacted.setattr("pytest_specgate.evidence.cli_commands.records_read_clean", lambda *_: True)
        code, shown = _specgate(capsys, *arguments)
    assert code in (0, 1) and PLANTED_HF_TOKEN in shown, shown
    if command == "merge":
        arguments[-1] += "-again"
    code, shown = _specgate(capsys, *arguments)
    assert code in (0, 1) and PLANTED_HF_TOKEN not in shown and "<HF_TOKEN>" in shown, shown
    if command == "merge":  # and merge.json, built from the same run ids, never holds it either
        files = [path.read_bytes() for path in (tmp_path / "merged-again").rglob("*") if path.is_file()]
        assert files and all(PLANTED_HF_TOKEN.encode() not in data for data in files)


def test_merge_writes_a_record_read_clean_with_the_verdict_it_chose_it_by(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A record merge writes as it read it is not judged again by the writer; one it must redact
    (a planted token) is, and the merged bundle passes the gate's check either way."""
    from pytest_specgate.evidence import _writer
    from pytest_specgate.evidence._gate import bundle_problems

    judged: list[str] = []
    real = _writer.judge
    monkeypatch.setattr(_writer, "judge", lambda record: judged.append(record.ac.id) or real(record))
    written = _engine_bundle(git_repo.path)
    assert _specgate(capsys, "merge", str(written.path), f"--out={tmp_path / 'clean'}")[0] == 0
    assert judged == [] and bundle_problems(load_bundle(tmp_path / "clean")) == []

    def plant(record: dict[str, Any]) -> None:
        record["tests"][0]["message"] = f"token {PLANTED_HF_TOKEN}"

    reseal_bundle(written.path, {"AC-10": plant})
    assert _specgate(capsys, "merge", str(written.path), f"--out={tmp_path / 'redacted'}")[0] == 0
    assert judged == ["AC-10", "AC-11"] and bundle_problems(load_bundle(tmp_path / "redacted")) == []
