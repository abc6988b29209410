"""Builders for evidence tests: a real git repository and a synthetic run through the collector.

The synthetic run feeds the real :class:`EvidenceCollector` the same ``TestReport`` objects
pytest would, so gate tests judge bundles the real writer produced. (A plain module, not the
conftest, so tests can import it by its unique name.)
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_specgate.contracts.census import Census
from pytest_specgate.contracts.payload import SPEC_PROPERTY
from pytest_specgate.evidence import (
    MANIFEST_NAME,
    MARKDOWN_NAME,
    Bundle,
    EvidenceCollector,
    EvidenceRecorder,
    WrittenBundle,
    bundle_digest,
    empty_properties,
    judge,
    read_records,
    render_markdown,
)
from pytest_specgate.evidence._bundle import (
    FileEntry,
    file_entry,
    load_bundle,
    manifest_document,
    read_ac_record,
)
from pytest_specgate.evidence._jsonio import pretty_json, record_json
from pytest_specgate.evidence._record_split import (
    RECORDS_NAME,
    RUN_FACTS_NAME,
    run_facts_document,
    split_records,
)
from pytest_specgate.evidence.cli_commands import configure_gate_parser, run_gate

PLANTED_HF_TOKEN = "hf_PlantedTokenValue0123456789abcdefXYZ"
HOST_FACTS: Mapping[str, Any] = {"os": "linux", "arch": "x86_64", "memory_bytes": 24 * 1024**3}
M4_HOST_FACTS: Mapping[str, Any] = {
    "os": "macos",
    "arch": "arm64",
    "os_version": "15.3",
    "apple_chip": "M4",
    "memory_bytes": 16 * 1024**3,
    "source": "probe",
}
M4_MATCHED: Mapping[str, Any] = {
    "requirement": {"profile": "m4-16gb", "apple": "M4", "min_memory_gb": 16},
    "profile": "m4-16gb",
    "matched": True,
    "reasons": [],
    "host_summary": "Apple M4, 16 GB",
}
"""A hardware verdict as the plugin records it for a test run on the 16 GB M4 above."""
PROBED_HOST: Mapping[str, Any] = {
    "origin": "probe",
    "simulated": False,
    "detail": None,
    "tools": [{"name": "sysctl", "path": "/usr/sbin/sysctl", "system_location": True, "answer_sha256": None}],
    "answers": [{"tool": "sysctl", "asked": "sysctl -n machdep.cpu.brand_string", "answer": None}],
}
"""Host provenance as the unedited probe writes it: the one honest host fact these tests construct."""
REAL_ENGINE: Mapping[str, Any] = {
    "backend": "vllm",
    "model": "tiny-target",
    "config": "vllm model=tiny-target",
    "versions": {"vllm": "0.11.0"},
    "identity": {"server": "uvicorn"},
    "simulated": False,
    "loopback": True,
    "version_known": True,
}
"""An engine fact of a real backend, shaped as the plugin records the engines it boots."""


def _git(repo: Path, *arguments: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=specgate-tests", "-c", "user.email=tests@example.invalid", *arguments],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout.strip()


@dataclass(frozen=True)
class GitRepo:
    path: Path
    commit: str


def make_git_repo(tmp_path: Path) -> GitRepo:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("out/\n__pycache__/\n")
    (repo / "spec.py").write_text("SPEC = 28\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "initial")
    return GitRepo(path=repo, commit=_git(repo, "rev-parse", "HEAD"))


CLEAN_RUN_PROVENANCE: Mapping[str, Any] = {
    "plugins": [{"plugin": "pytest_specgate.plugin", "distribution": "pytest-specgate", "version": "0.1.0"}],
    "environment": dict.fromkeys(("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "PYTHONSTARTUP")),
    "startup_files": [],
    "sys_path_outside": [],
    "conftests_above_rootdir": [],
    "foreign_modules": {},
    "specgate": {"distribution": "pytest-specgate", "version": "0.1.0", "install": "distribution",
                 "location": "<site-packages>/pytest_specgate", "mismatched": []},
    "backends": {},
}
"""What a run from a clean checkout with pytest-specgate installed from a wheel records."""


CHECKOUT = Path(__file__).resolve().parents[2]


def reasons_besides_this_checkout(record: Mapping[str, Any]) -> list[str]:
    """A subprocess run's reasons, less those naming this checkout's pytest_specgate as foreign.

    A pytest run in a subprocess imports the plugin from this checkout (installed editable, or
    through ``$PYTHONPATH``), outside the project under test and any built install: rightly
    foreign there. The in-process runs have ``tests/conftest.py`` set it aside; a subprocess run
    can only leave out the reasons about it (the one-line editable reason, the module list, a
    ``PYTHONPATH`` naming only the checkout), and only when nothing but the plugin was foreign.
    """
    provenance = record["run_provenance"]
    if not all(name.partition(" ")[0].partition(".")[0] == "pytest_specgate"
               for name in provenance["foreign_modules"]):
        return list(record["not_qualifying_reasons"])
    about_the_checkout = ("modules imported from outside the repository and every installed",
                          "pytest-specgate is installed editable from ", "pytest-specgate is imported from ")
    only_checkout_on_path = all(Path(entry).resolve() == CHECKOUT
                                for entry in provenance.get("pythonpath_outside", []))
    return [reason for reason in record["not_qualifying_reasons"]
            if not reason.startswith(about_the_checkout)
            and not (only_checkout_on_path and reason.startswith("PYTHONPATH entries outside"))]


class SyntheticRun:
    """Drive an EvidenceCollector with hand-made reports, one test at a time."""

    def __init__(self, repo: Path, environ: Mapping[str, str], **options: Any) -> None:
        self.evidence_dir = repo / "out"
        self.collector = EvidenceCollector(
            evidence_dir=self.evidence_dir,
            host_facts=options.pop("host_facts", HOST_FACTS),
            host_provenance=options.pop("host_provenance", PROBED_HOST),
            diagnostic=options.pop("diagnostic", False),
            allow_dirty=options.pop("allow_dirty", False),
            rootdir=repo,
            environ=environ,
            host_summary="linux x86_64, 24 GB, no GPU",
            **options,
        )
        self.carriers: dict[str, str] = {}
        """The census of this synthetic project: every AC test it ran (so every AC is whole)."""

    def recorder(self, nodeid: str) -> EvidenceRecorder:
        return EvidenceRecorder(nodeid, self.collector.redactor, self.collector.staging)

    def payload(
        self,
        nodeid: str,
        ac: Mapping[str, Any] | None,
        recorder: EvidenceRecorder | None,
        hardware: Mapping[str, Any] | None,
        mode: str,
    ) -> dict[str, Any]:
        recorded = recorder.to_properties() if recorder is not None else empty_properties()
        return {
            "nodeid": nodeid,
            "ac": None if ac is None else dict(ac),
            "hardware": hardware,
            "mode": mode,
            **recorded,
        }

    def report(self, nodeid: str, when: str, outcome: str, longrepr: Any, payload: Mapping[str, Any]) -> None:
        report = pytest.TestReport(
            nodeid=nodeid,
            location=(nodeid.split("::")[0], 1, nodeid),
            keywords={},
            outcome=outcome,  # type: ignore[arg-type]
            longrepr=longrepr,
            when=when,  # type: ignore[arg-type]
            duration=0.25,
            user_properties=[(SPEC_PROPERTY, dict(payload))],
        )
        self.collector.pytest_runtest_logreport(report)

    def start(self, nodeid: str, ac: Mapping[str, Any] | None, mode: str = "default") -> None:
        if ac is not None:
            self.carriers[nodeid] = str(ac["id"])
        self.collector.pytest_runtest_logstart(nodeid=nodeid)
        self.report(nodeid, "setup", "passed", None, self.payload(nodeid, ac, None, None, mode))

    def run_test(
        self,
        nodeid: str,
        ac: Mapping[str, Any] | None,
        *,
        outcome: str = "passed",
        message: str = "assert 1 == 2",
        recorder: EvidenceRecorder | None = None,
        hardware: Mapping[str, Any] | None = None,
        mode: str = "default",
    ) -> None:
        payload = self.payload(nodeid, ac, recorder, hardware, mode)
        if ac is not None:
            self.carriers[nodeid] = str(ac["id"])
        self.collector.pytest_runtest_logstart(nodeid=nodeid)
        if outcome == "skipped":
            self.report(nodeid, "setup", "skipped", (nodeid, 1, f"Skipped: {message}"), payload)
        else:
            self.report(nodeid, "setup", "passed", None, payload)
            self.report(nodeid, "call", outcome, None if outcome == "passed" else message, payload)
        self.report(nodeid, "teardown", "passed", None, payload)

    def finish(self, exitstatus: int = 0) -> WrittenBundle:
        if self.collector.census is None:
            self.collector.census = Census((".",), self.carriers)
        if self.collector.run_provenance is None:
            self.collector.run_provenance = CLEAN_RUN_PROVENANCE
        return self.collector.finish(exitstatus)


TEST_ENV: Mapping[str, str] = {
    "HF_TOKEN": PLANTED_HF_TOKEN,
    "HOME": "/home/specgate-tester",
    "USER": "specgate-tester",
}


def git(repo: Path, *arguments: str) -> str:
    return _git(repo, *arguments)


AC10 = {
    "id": "AC-10",
    "spec": "SPEC-028",
    "title": "16 GB M4 performance canary",
    "waived_to": None,
    "reason": None,
}
AC11 = {
    "id": "AC-11",
    "spec": "SPEC-028",
    "title": "8 GB M1 small-air canary",
    "waived_to": None,
    "reason": None,
}


def qualifying_bundle(repo: Path, environ: Mapping[str, str], **options: Any) -> WrittenBundle:
    """AC-10 (two tests, a measurement, an attachment) and AC-11, all passing, clean tree."""
    run = SyntheticRun(repo, environ, **options)
    recorder = run.recorder("acceptance/test_ac10.py::test_speedup")
    recorder.measure("median_speedup", 1.52, "x", at_least=1.4)
    recorder.attach("server.log", b"boot ok\nready on 127.0.0.1:8000\n")
    recorder.attach("trace.bin", bytes(range(256)))
    recorder.note("engine", {"name": "mock", "version": "0.1.0"})
    run.run_test("acceptance/test_ac10.py::test_speedup", AC10, recorder=recorder)
    run.run_test("acceptance/test_ac10.py::test_greedy_identity", AC10)
    run.run_test("acceptance/test_ac11.py::test_small_air", AC11)
    run.run_test("tests/test_helper.py::test_no_ac", None)
    return run.finish()


def cli(
    capsys: pytest.CaptureFixture[str],
    configure: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    *arguments: str,
) -> tuple[int, str, str]:
    """One ``specgate`` evidence subcommand: exit code, stdout, stderr."""
    parser = argparse.ArgumentParser()
    configure(parser)
    code = run(parser.parse_args(list(arguments)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


POLICY_LINE = "specgate gate: policy specgate.policy/1; commit "


def gate(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, list[str], str]:
    """``specgate gate ARGUMENTS`` in process: exit code, stdout lines after the policy line (which
    every judged run prints first, checked here), stderr."""
    parser = argparse.ArgumentParser(prog="specgate gate")
    configure_gate_parser(parser)
    code = run_gate(parser.parse_args(list(arguments)))
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    if code != 2:
        assert lines[0].startswith(POLICY_LINE), lines
        lines = lines[1:]
    return code, lines, captured.err


def ac_record(bundle: Path, ac_id: str) -> dict[str, Any]:
    """One AC's record as the judge reads it (a format-2 line with its run's facts joined in),
    as plain JSON a test may edit without touching another AC's."""
    document = read_ac_record(load_bundle(bundle), ac_id).document
    copied: dict[str, Any] = json.loads(json.dumps(document))
    return copied


def write_records(bundle: Path, documents: Iterable[Mapping[str, Any]]) -> dict[str, FileEntry]:
    """Write ``records.jsonl`` and ``run.json`` of these records, as the writer splits them;
    returns each record line's entry."""
    split = split_records(documents)
    lines = {ac_id: record_json(own).encode() for ac_id, own in split.lines}
    (bundle / RECORDS_NAME).write_bytes(b"".join(lines.values()))
    (bundle / RUN_FACTS_NAME).write_text(pretty_json(run_facts_document(split.runs)))
    return {ac_id: file_entry(data) for ac_id, data in lines.items()}


def reseal_bundle(
    bundle: Path, edits: Mapping[str, Callable[[dict[str, Any]], None]], *, rerender: bool = True
) -> str:
    """Forge a bundle as its author could: edit AC records, then rebuild every digest with the
    package's own helpers. ``rerender`` renders evidence.md with the package (showing the verdict
    the policy recomputes); otherwise the old markdown is kept with only its digests swapped.
    Returns the new evidence.md, ready to paste into a PR body."""
    manifest = json.loads((bundle / MANIFEST_NAME).read_text())
    records: dict[str, FileEntry] | None = None
    if "records" in manifest:
        documents = {ac_id: ac_record(bundle, ac_id) for ac_id in sorted(manifest["records"])}
        for ac_id, edit in edits.items():
            edit(documents[ac_id])
        records = write_records(bundle, documents.values())
    else:  # format 1: one file per AC
        for ac_id, edit in edits.items():
            record = ac_record(bundle, ac_id)
            edit(record)
            (bundle / f"{ac_id}.json").write_text(record_json(record))
    files = {
        name: file_entry((bundle / name).read_bytes()) for name in manifest["files"] if name != MARKDOWN_NAME
    }
    digest = bundle_digest(files, manifest["run_id"], manifest["specgate"], records)
    unchecked = load_bundle_unchecked(bundle, files, manifest, records)
    old_markdown = (bundle / MARKDOWN_NAME).read_text()
    if rerender:
        typed = read_records(unchecked)
        markdown = render_markdown(
            [(typed[ac], judge(typed[ac]), _sha256(unchecked, ac)) for ac in sorted(typed)], digest
        )
    else:
        markdown = old_markdown.replace(manifest["bundle_sha256"], digest)
        for ac_id in unchecked.ac_ids():
            old = manifest["records"][ac_id] if records is not None else manifest["files"][f"{ac_id}.json"]
            markdown = markdown.replace(old["sha256"], _sha256(unchecked, ac_id))
    (bundle / MARKDOWN_NAME).write_text(markdown)
    files[MARKDOWN_NAME] = file_entry(markdown.encode())
    if records is None:
        document = {**manifest_document(manifest["run_id"], files, manifest["specgate"], {}),
                    "schema": manifest["schema"], "bundle_sha256": bundle_digest(files, manifest["run_id"],
                                                                                 manifest["specgate"])}
        del document["records"]
    else:
        document = manifest_document(manifest["run_id"], files, manifest["specgate"], records)
    (bundle / MANIFEST_NAME).write_text(pretty_json(document))
    return markdown


def _sha256(bundle: Bundle, ac_id: str) -> str:
    entry = bundle.record_entry(ac_id)
    assert entry is not None, ac_id
    return entry.sha256


def rendered_in_layout(bundle: Path, layout: int) -> str:
    """``evidence.md`` of a bundle's records in ``layout`` (layout 1: as main wrote it before
    layout 2), as the gate renders it to compare."""
    loaded = load_bundle(bundle)
    typed = read_records(loaded)
    judged = [(typed[ac], judge(typed[ac]), _sha256(loaded, ac)) for ac in sorted(typed)]
    return render_markdown(judged, loaded.digest, layout=layout)


def load_bundle_unchecked(
    bundle: Path, files: Mapping[str, FileEntry], manifest: Mapping[str, Any],
    records: Mapping[str, FileEntry] | None = None,
) -> Bundle:
    """The bundle as the forger's rebuilt file list describes it (before the manifest is rewritten);
    ``records``: a format-2 bundle's record lines (None: format 1)."""
    digest = bundle_digest(files, manifest["run_id"], manifest["specgate"], records)
    return Bundle(path=bundle, run_id=manifest["run_id"], files=files, digest=digest, stated_digest=digest,
                  records=records)


def record_line(bundle: Path, ac_id: str) -> bytes:
    """The AC's line of a format-2 bundle's ``records.jsonl``, as its manifest orders them."""
    order = sorted(json.loads((bundle / MANIFEST_NAME).read_text())["records"])
    return (bundle / RECORDS_NAME).read_bytes().splitlines(keepends=True)[order.index(ac_id)]


def every_byte_written(paths: list[Path]) -> dict[str, bytes]:
    """Each file's bytes, with gzip and zip contents (and zip member names) opened."""
    seen: dict[str, bytes] = {}
    for path in paths:
        data = path.read_bytes()
        seen[str(path)] = data
        if data[:2] == b"\x1f\x8b":
            seen[f"{path} (gunzipped)"] = gzip.decompress(data)
        if data[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    seen[f"{path}!{info.filename}"] = info.filename.encode() + b"\n" + archive.read(info)
    return seen
