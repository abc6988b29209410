from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_specgate.evidence import (
    EvidenceRecorder,
    LocalIdentity,
    Redactor,
    build_redactor,
    empty_properties,
)
from pytest_specgate.evidence._jsonio import sha256_hex

IDENTITY = LocalIdentity(
    user_names=("alice-ops",), host_names=("buildbox-7",), home_dirs=("/home/alice-ops",)
)
NODE = "acceptance/test_ac10.py::test_speedup"


def _recorder(staging: Path | None) -> EvidenceRecorder:
    redactor = build_redactor(Path("/srv/repo"), (), {"HF_TOKEN": "hf_tokenvalue_123"}, IDENTITY)
    return EvidenceRecorder(NODE, redactor, staging)


def test_met_threshold_is_recorded_as_passed() -> None:
    recorder = _recorder(None)
    measurement = recorder.measure("median_speedup", 1.52, "x", at_least=1.4, at_most=3)
    assert measurement.passed
    assert recorder.to_properties()["measurements"] == [
        {
            "name": "median_speedup",
            "value": 1.52,
            "unit": "x",
            "at_least": 1.4,
            "at_most": 3.0,
            "passed": True,
            "decide": "point",
            "verdict": "passed",
        }
    ]


@pytest.mark.parametrize(
    ("value", "bounds", "message"),
    [
        (1.2, {"at_least": 1.4}, "measurement median_speedup = 1.2 x is below at_least=1.4"),
        (3.5, {"at_most": 3.0}, "measurement median_speedup = 3.5 x is above at_most=3"),
        (float("nan"), {"at_least": 1.0}, "measurement median_speedup = nan x is not a number"),
    ],
)
def test_missed_threshold_is_recorded_and_fails_only_when_asked(
    value: float, bounds: dict[str, float], message: str
) -> None:
    recorder = _recorder(None)
    recorder.measure("median_speedup", value, "x", **bounds)
    recorder.measure("tokens", 12)
    recorded = recorder.to_properties()["measurements"]
    assert [row["passed"] for row in recorded] == [False, True]
    assert recorder.misses == (message,)
    with pytest.raises(pytest.fail.Exception) as raised:
        recorder.fail_on_new_misses()
    assert str(raised.value) == f"{NODE}: {message}"
    recorder.fail_on_new_misses()


def test_soft_failure_names_the_ac_and_first_miss_and_counts_the_others() -> None:
    recorder = EvidenceRecorder(NODE, build_redactor(Path("/srv/repo"), (), {}, IDENTITY), None,
                                ac_id="AC-10")
    recorder.measure("median_speedup", 1.1, "x", at_least=1.4)
    assert recorder.check(True, "never shown") is True
    assert recorder.check(False, "greedy output differs at token 3") is False
    recorder.measure("acceptance_rate", 0.2, at_least=0.3)
    with pytest.raises(pytest.fail.Exception) as raised:
        recorder.fail_on_new_misses()
    assert str(raised.value).splitlines() == [
        f"AC-10: {NODE}: measurement median_speedup = 1.1 x is below at_least=1.4 "
        "(and 2 more soft-check misses)",
        "AC-10: greedy output differs at token 3",
        "AC-10: measurement acceptance_rate = 0.2 is below at_least=0.3",
    ]


def test_figure_without_bounds_always_passes() -> None:
    assert _recorder(None).measure("tokens", 12).passed


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: r.measure("", 1.0), "name must be a non-empty string"),
        (lambda r: r.measure("x", "1.0"), "value must be a real number, found '1.0'"),
        (lambda r: r.measure("x", True), "value must be a real number, found True"),
        (lambda r: r.measure("x", 1.0, at_least="2"), "at_least must be a real number"),
        (lambda r: r.measure("x", 1.0, unit=3), "unit must be a string"),
        (lambda r: r.attach("log", 3), "expected bytes, str or pathlib.Path, found int"),
        (lambda r: r.note("", 1), "key must be a non-empty string"),
        (lambda r: r.check(False, ""), "message must be a non-empty string"),
    ],
)
def test_bad_arguments_say_what_was_expected(call: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call(_recorder(None))  # type: ignore[operator]


def test_attach_stages_redacted_text_under_its_digest(tmp_path: Path) -> None:
    recorder = _recorder(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("user alice-ops token hf_tokenvalue_123 at /srv/repo/logs/a.txt\n")
    attachment = recorder.attach("/home/alice-ops/server.log", log)
    stored = (tmp_path / attachment.sha256).read_bytes()
    assert stored == b"user <USER> token <SECRET> at logs/a.txt\n"
    assert attachment.sha256 == sha256_hex(stored) and attachment.size == len(stored)
    assert attachment.text and attachment.staged and attachment.name == "server.log"


def test_attach_keeps_binary_bytes(tmp_path: Path) -> None:
    recorder = _recorder(tmp_path)
    blob = bytes(range(256))
    attachment = recorder.attach("weights.bin", blob)
    assert (tmp_path / attachment.sha256).read_bytes() == blob and not attachment.text


def test_attach_without_evidence_dir_records_digest_only() -> None:
    attachment = _recorder(None).attach("log", "hello")
    assert attachment.sha256 == sha256_hex(b"hello") and not attachment.staged


def test_properties_are_json_safe_and_redacted() -> None:
    recorder = _recorder(None)
    recorder.note("weights", {"path": Path("/home/alice-ops/m.safetensors"), "sha": b"\x00\x01"})
    properties = recorder.to_properties()
    assert json.loads(json.dumps(properties)) == properties
    assert properties["notes"] == {"weights": {"path": "<PATH>", "sha": "<2 bytes>"}}
    assert set(properties) == set(empty_properties())


def test_a_redactor_factory_runs_only_when_text_needs_redacting() -> None:
    built: list[str] = []

    def factory() -> Redactor:
        built.append("built")
        return build_redactor(Path("/srv/repo"), (), {}, IDENTITY)

    recorder = EvidenceRecorder(NODE, factory, None)
    recorder.measure("median_speedup", 1.5, at_least=1.4)
    assert built == []
    recorder.note("machine", "buildbox-7 as alice-ops")
    recorder.note("again", "alice-ops")
    assert built == ["built"]
    assert recorder.to_properties()["notes"] == {"machine": "<HOST> as <USER>", "again": "<USER>"}
