"""An attachment is listed as written, after redaction, and merge keeps that true across hosts.

Each host redacts with its own patterns and its own secrets; ``specgate merge`` redacts every
file again with the merging host's. What the manifest and the records name must be the bytes
and the paths on disk, or the merged bundle fails the gate's own check.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

import pytest
from evidence_testkit import AC10, AC11, PLANTED_HF_TOKEN, TEST_ENV, GitRepo, SyntheticRun, cli

from pytest_specgate.evidence import build_redactor, load_bundle, read_records, verify_bundle
from pytest_specgate.evidence._bundle import file_entry
from pytest_specgate.evidence._writer import write_attachment, write_bundle
from pytest_specgate.evidence.cli_commands import (
    configure_gate_parser,
    configure_merge_parser,
    run_gate,
    run_merge,
)

MERGE_HOST_SECRET = "plainvalue-abc-123456"
"""A value only the merging host holds as a secret (in an ``*_API_TOKEN`` variable)."""
M1_SECRET = "m1-host-only-value-778899"


def test_an_attachment_is_listed_with_the_bytes_written_after_redaction(tmp_path: Path) -> None:
    redactor = build_redactor(tmp_path, (), TEST_ENV)
    raw = f"boot ok\nAuthorization: Bearer {PLANTED_HF_TOKEN}\n".encode()
    entry = write_attachment(tmp_path, redactor, "attachments/boot.log", raw)
    written = (tmp_path / "attachments" / "boot.log").read_bytes()
    assert PLANTED_HF_TOKEN.encode() not in written
    assert entry == file_entry(written)
    write_bundle(tmp_path, redactor, "run-1", [], {"attachments/boot.log": entry}, None, None, "0.1.0")
    assert verify_bundle(load_bundle(tmp_path)) == []


def _host_run(repo: Path, environ: dict[str, str], patterns: tuple[str, ...], ac: dict[str, object],
              attachment: tuple[str, bytes]) -> Path:
    run = SyntheticRun(repo, environ, redact_patterns=patterns)
    nodeid = f"acceptance/test_{str(ac['id']).lower()}.py::test_spec"
    recorder = run.recorder(nodeid)
    recorder.attach(*attachment)
    run.run_test(nodeid, ac, recorder=recorder)
    return run.finish().path


def test_merge_across_hosts_with_different_redaction_patterns_verifies_and_leaks_nothing(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The M4 redacts ticket ids (its project's pattern) but not the merging host's secret,
    # which it does not know: that value is in the attachment's name and bytes.
    m4 = _host_run(git_repo.path, dict(TEST_ENV), (r"TICKET-[0-9]{4}",), AC10,
                   (f"{MERGE_HOST_SECRET}.log", f"TICKET-1234 {MERGE_HOST_SECRET} ready\n".encode()))
    m1 = _host_run(git_repo.path, {**TEST_ENV, "M1_API_TOKEN": M1_SECRET}, (), AC11,
                   ("server.log", f"{M1_SECRET} TICKET-5678 ready\n".encode()))
    monkeypatch.setenv("MERGE_HOST_API_TOKEN", MERGE_HOST_SECRET)
    merged = tmp_path / "merged"
    code, _, err = cli(capsys, configure_merge_parser, run_merge, str(m4), str(m1), "--out", str(merged))
    assert (code, err) == (0, "")
    bundle = load_bundle(merged)
    assert verify_bundle(bundle) == []
    for path in merged.rglob("*"):
        assert MERGE_HOST_SECRET not in str(path.relative_to(merged))
        if path.is_file():
            data = path.read_bytes()
            assert MERGE_HOST_SECRET.encode() not in data and M1_SECRET.encode() not in data, path
            assert b"TICKET-1234" not in data, path
    attachments = {name: entry for name, entry in bundle.files.items() if name.startswith("attachments/")}
    assert len(attachments) == 2
    for name, entry in attachments.items():
        assert entry == file_entry((merged / name).read_bytes())
    rows = [row for record in read_records(bundle).values() for row in record.document["attachments"]]
    assert {row["path"]: (row["sha256"], row["size"]) for row in rows} == {
        name: (entry.sha256, entry.size) for name, entry in attachments.items()
    }
    body = tmp_path / "PR.md"
    body.write_text((merged / "evidence.md").read_text())
    code, out, _ = cli(capsys, configure_gate_parser, run_gate, "--pr-body", str(body), "--evidence",
                       str(merged), "--require", "AC-10", "--require", "AC-11", "--commit", git_repo.commit)
    assert code == 0, out
    assert out.splitlines()[-1] == "specgate gate: accepted AC-10, AC-11"


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(*, text: tuple[bytes, bytes] = (b"tEXt", b"Comment\x00"),
         pixels: bytes = zlib.compress(b"\x00\xff\x00\x00"), after: bytes = b"") -> bytes:
    """A 1x1 PNG: a text chunk (tEXt, zTXt or iTXt), ``pixels`` as its IDAT data, ``after`` past IEND."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"".join([
        b"\x89PNG\r\n\x1a\n", _png_chunk(b"IHDR", header), _png_chunk(*text),
        _png_chunk(b"IDAT", pixels), _png_chunk(b"IEND", b""), after,
    ])


def _png_with_text(comment: bytes) -> bytes:
    """A 1x1 PNG carrying ``comment`` in a tEXt chunk, as a plotting library writes its metadata."""
    return _png(text=(b"tEXt", b"Comment\x00" + comment))


RANDOM_RUN = b"Xq9vR2mT7pL4sK8wZ3nB6yH1cD5f"
"""28 characters that read as a generated credential to the shape rules."""


def test_a_png_whose_pixel_data_reads_like_a_token_is_stored_byte_identical(tmp_path: Path) -> None:
    """Compressed pixels are no text a reader can read: a long plot holds runs that look random."""
    png = _png(pixels=b"\x78\x9c" + RANDOM_RUN + b"\x00\x01" + RANDOM_RUN.lower())
    redactor = build_redactor(tmp_path, ())
    assert redactor.secrets_only().text(png.decode("latin-1")) != png.decode("latin-1")
    recorder = SyntheticRun(tmp_path, TEST_ENV).recorder("tests/test_plot.py::test_plot")
    attachment = recorder.attach("p.png", png)
    assert attachment.problem is None and attachment.sha256 == hashlib.sha256(png).hexdigest()


def test_a_token_anywhere_a_png_holds_text_withholds_it(tmp_path: Path) -> None:
    token = PLANTED_HF_TOKEN.encode()
    itxt = b"Comment\x00\x01\x00en\x00Comment\x00" + zlib.compress(b"key " + token)
    pictures = {
        "tEXt": _png_with_text(b"token " + token),
        "zTXt": _png(text=(b"zTXt", b"Comment\x00\x00" + zlib.compress(b"token " + token))),
        "iTXt": _png(text=(b"iTXt", itxt)),
        "past IEND": _png(after=b"token " + token),
        "raw in IDAT": _png(pixels=b"\x78\x9c" + token),
        "cut chunk": _png_with_text(b"x")[:-20] + b"token " + token,
    }
    recorder = SyntheticRun(tmp_path, TEST_ENV).recorder("tests/test_plot.py::test_plot")
    for where, png in pictures.items():
        attachment = recorder.attach("plot.png", png)
        assert attachment.sha256 is None and attachment.problem is not None, where
        assert attachment.problem.startswith("refused: binary content"), where


def test_a_png_whose_bytes_look_like_addresses_is_stored_byte_identical(tmp_path: Path) -> None:
    png = _png_with_text(b"served from 2001:db8::42 via 10.20.30.40 in /home/alice/plots")
    recorder = SyntheticRun(tmp_path, TEST_ENV).recorder("tests/test_plot.py::test_plot")
    attachment = recorder.attach("latency.png", png)
    assert attachment.problem is None and attachment.sha256 == hashlib.sha256(png).hexdigest()
    assert attachment.size == len(png) and not attachment.text


def test_a_binary_blob_holding_a_token_is_withheld_with_its_reason_not_rewritten(tmp_path: Path) -> None:
    recorder = SyntheticRun(tmp_path, TEST_ENV).recorder("tests/test_plot.py::test_plot")
    for name, blob in [
        ("dump.bin", bytes(range(256)) + PLANTED_HF_TOKEN.encode() + b"\xfe\x80"),
        ("utf16.bin", b"\x89\xab" * 100 + PLANTED_HF_TOKEN.encode("utf-16-le") + b"\xfe\x80"),
        ("plot.png", _png_with_text(b"token " + PLANTED_HF_TOKEN.encode())),
    ]:
        attachment = recorder.attach(name, blob)
        assert attachment.sha256 is None and attachment.size is None, name
        assert attachment.problem is not None and attachment.problem.startswith(
            "refused: binary content"
        ) and "withheld, not rewritten" in attachment.problem, name


def test_text_attachments_are_still_redacted_as_text(tmp_path: Path) -> None:
    run = SyntheticRun(tmp_path, TEST_ENV)
    log = f"listening on 10.20.30.40 key {PLANTED_HF_TOKEN}\n".encode()
    attachment = run.recorder("tests/test_log.py::test_log").attach("server.log", log)
    stored = run.collector.redactor.encode(log)
    assert attachment.problem is None and attachment.text
    assert attachment.sha256 == hashlib.sha256(stored).hexdigest() and stored != log
    assert PLANTED_HF_TOKEN.encode() not in stored and b"10.20.30.40" not in stored
