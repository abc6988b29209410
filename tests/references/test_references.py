"""Reference outputs: written with their digests, refused when edited, unpinned or missing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_specgate.fetching.references import (
    ReferenceError,
    ReferenceResponse,
    canonical_bytes,
    load_reference,
    write_reference,
)

BUILD = {"build": "the mock built without speculative decoding", "target": "tiny:target"}
RESPONSES = (
    ReferenceResponse("messages[0] chat", {"choices": [{"text": "cloud sun"}], "model": "m"}),
    ReferenceResponse("messages[0] stream", [{"delta": "cloud"}, {"delta": " sun"}]),
)


def test_a_written_reference_loads_back_with_its_build_and_bodies(tmp_path: Path) -> None:
    path = write_reference(tmp_path, "fr1-mock", BUILD, RESPONSES)

    loaded = load_reference(path)
    assert path == tmp_path / "fr1-mock.json"
    assert loaded.name == "fr1-mock" and dict(loaded.build) == BUILD
    assert loaded.body_of("messages[0] stream") == [{"delta": "cloud"}, {"delta": " sun"}]
    sums = (tmp_path / "SHA256SUMS").read_text()
    assert sums == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  fr1-mock.json\n"
    stored = json.loads(path.read_text())["responses"][0]
    assert stored["sha256"] == hashlib.sha256(canonical_bytes(stored["body"])).hexdigest()


def test_a_second_reference_keeps_the_first_pinned(tmp_path: Path) -> None:
    first = write_reference(tmp_path, "fr1-mock", BUILD, RESPONSES)
    write_reference(tmp_path, "fr1-mlx", BUILD, RESPONSES[:1])

    assert load_reference(first).name == "fr1-mock"
    assert len((tmp_path / "SHA256SUMS").read_text().splitlines()) == 2


def test_an_edited_reference_is_refused_naming_the_pin(tmp_path: Path) -> None:
    path = write_reference(tmp_path, "fr1-mock", BUILD, RESPONSES)
    path.write_text(path.read_text().replace("cloud sun", "cloud rain"))

    with pytest.raises(ReferenceError, match=r"fr1-mock.json: sha256 [0-9a-f]{64}, but .*SHA256SUMS pins"):
        load_reference(path)


def test_a_body_edited_and_repinned_still_fails_its_own_digest(tmp_path: Path) -> None:
    path = write_reference(tmp_path, "fr1-mock", BUILD, RESPONSES)
    edited = path.read_text().replace("cloud sun", "cloud rain")
    path.write_text(edited)
    digest = hashlib.sha256(edited.encode()).hexdigest()
    (tmp_path / "SHA256SUMS").write_text(f"{digest}  fr1-mock.json\n")

    with pytest.raises(ReferenceError, match=r"response 'messages\[0\] chat' hashes to .*, recorded"):
        load_reference(path)


def test_unpinned_and_missing_references_say_what_to_do(tmp_path: Path) -> None:
    path = write_reference(tmp_path, "fr1-mock", BUILD, RESPONSES)
    (tmp_path / "SHA256SUMS").unlink()
    unpinned = r"not pinned in .*SHA256SUMS; an unpinned reference is not believed"
    with pytest.raises(ReferenceError, match=unpinned):
        load_reference(path)
    missing = r"fr1-vllm.json: no reference outputs .*--specgate-record-reference="
    with pytest.raises(ReferenceError, match=missing):
        load_reference(tmp_path / "fr1-vllm.json")
