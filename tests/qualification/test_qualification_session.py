"""Ordered gates, the always-current receipt, checkpoints and the final verdict."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from qualification_testkit import NoteRecorder

from pytest_specgate.evidence import NOT_QUALIFIED, QUALIFIED, Redactor
from pytest_specgate.qualification import (
    GateSpec,
    NotQualified,
    QualificationError,
    QualificationSession,
    RecoveryNotEvidenced,
)

GATES = (GateSpec("boot_check", 2), GateSpec("tool_json_reasoning_parser", 2), GateSpec("eos", 5, kind="eos"))


def receipt(directory: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((directory / "receipt.json").read_text())
    return loaded


def checkpoints(directory: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (directory / "checkpoints.jsonl").read_text().splitlines()]


def session(tmp_path: Path, **kwargs: object) -> QualificationSession[object]:
    return QualificationSession(tmp_path, GATES, redactor=Redactor(rules=()), **kwargs)  # type: ignore[arg-type]


def test_all_gates_passing_in_order_qualifies_with_a_digest_per_gate(tmp_path: Path) -> None:
    with session(tmp_path, source_commit="abc123") as qualification:
        for spec in GATES:
            with qualification.gate(spec.name) as gate:
                gate.record({"checked": spec.name})
    document = receipt(tmp_path)
    assert document["verdict"] == QUALIFIED
    assert document["failing_gate"] is None
    assert document["status"] == "finished"
    assert document["source_commit"] == "abc123"
    gates = document["gates"]
    assert isinstance(gates, list)
    for entry, spec in zip(gates, GATES, strict=True):
        data = (tmp_path / f"{spec.name}.json").read_bytes()
        assert entry["state"] == "passed"
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert json.loads(data)["record"] == {"checked": spec.name}
    assert [line["gate"] for line in checkpoints(tmp_path)] == [spec.name for spec in GATES]
    assert all(line["passed"] for line in checkpoints(tmp_path))


def test_receipt_names_the_running_gate_before_its_body_runs(tmp_path: Path) -> None:
    seen: list[tuple[object, object, object]] = []
    with session(tmp_path) as qualification:
        opened = receipt(tmp_path)
        assert (opened["verdict"], opened["failing_gate"]) == (NOT_QUALIFIED, "boot_check")
        for spec in GATES:
            with qualification.gate(spec.name):
                now = receipt(tmp_path)
                seen.append((now["verdict"], now["failing_gate"], now["running_gate"]))
    assert seen == [(NOT_QUALIFIED, spec.name, spec.name) for spec in GATES]


def test_third_gate_failing_leaves_it_as_failing_gate_and_not_qualified(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="EOS not reached"), session(tmp_path) as qualification:
        with qualification.gate("boot_check"):
            pass
        with qualification.gate("tool_json_reasoning_parser"):
            pass
        with qualification.gate("eos"):
            raise AssertionError("EOS not reached")
    document = receipt(tmp_path)
    assert document["verdict"] == NOT_QUALIFIED
    assert document["failing_gate"] == "eos"
    assert document["status"] == "failed"
    gates = document["gates"]
    assert isinstance(gates, list)
    states = [entry["state"] for entry in gates]
    assert states == ["passed", "passed", "failed"]
    failed = json.loads((tmp_path / "eos.json").read_text())
    assert failed["passed"] is False
    assert "EOS not reached" in failed["error"]
    assert [line["passed"] for line in checkpoints(tmp_path)] == [True, True, False]


def test_evidence_carried_by_a_failing_check_lands_in_the_gate_file(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    with pytest.raises(RecoveryNotEvidenced), qualification.gate("boot_check"):
        raise RecoveryNotEvidenced("slot not freed", {"counters_after": {"slots_active": 1}})
    assert json.loads((tmp_path / "boot_check.json").read_text())["record"] == {
        "counters_after": {"slots_active": 1}
    }


def test_tampered_gate_file_after_pass_is_not_qualified(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    for spec in GATES:
        with qualification.gate(spec.name) as gate:
            gate.record({"value": 1})
    evidence_file = tmp_path / "tool_json_reasoning_parser.json"
    evidence_file.write_text(evidence_file.read_text().replace('"value": 1', '"value": 2'))
    verdict = qualification.finish()
    assert verdict.verdict == NOT_QUALIFIED
    assert verdict.failing_gate == "tool_json_reasoning_parser"
    assert "no longer matches" in verdict.reasons[0]
    assert receipt(tmp_path)["verdict"] == NOT_QUALIFIED
    assert receipt(tmp_path)["failing_gate"] == "tool_json_reasoning_parser"


def test_deleted_gate_file_is_not_qualified(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    for spec in GATES:
        with qualification.gate(spec.name):
            pass
    (tmp_path / "eos.json").unlink()
    verdict = qualification.finish()
    assert (verdict.verdict, verdict.failing_gate) == (NOT_QUALIFIED, "eos")
    assert "missing" in verdict.reasons[0]


def test_with_block_ending_short_of_the_last_gate_raises_not_qualified(tmp_path: Path) -> None:
    with (
        pytest.raises(NotQualified, match=r"failing gate 'eos'.*never ran"),
        session(tmp_path) as qualification,
    ):
        with qualification.gate("boot_check"):
            pass
        with qualification.gate("tool_json_reasoning_parser"):
            pass
    assert receipt(tmp_path)["failing_gate"] == "eos"


def test_gate_out_of_order_is_an_error_naming_the_gate(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    out_of_order = "gate 'eos' out of order: expected 'boot_check' next"
    with pytest.raises(QualificationError, match=out_of_order), qualification.gate("eos"):
        pytest.fail("the body of an out-of-order gate must not run")
    assert "out of order" in str(receipt(tmp_path)["reasons"])
    for spec in GATES:
        with qualification.gate(spec.name):
            pass
    verdict = qualification.finish()
    assert (verdict.verdict, verdict.failing_gate) == (NOT_QUALIFIED, "eos")
    assert "out of order" in verdict.reasons[0]


def test_undeclared_gate_is_an_error_listing_the_declared_ones(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    undeclared = (
        "gate 'vision' is not declared; declared gates in order: boot_check, tool_json_reasoning_parser, eos"
    )
    with pytest.raises(QualificationError, match=undeclared), qualification.gate("vision"):
        pass


def test_a_gate_cannot_run_twice(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    with qualification.gate("boot_check"):
        pass
    with (
        pytest.raises(QualificationError, match="gate 'boot_check' out of order"),
        qualification.gate("boot_check"),
    ):
        pass


def test_no_gate_runs_after_a_failure(tmp_path: Path) -> None:
    qualification = session(tmp_path).open()
    with pytest.raises(ValueError), qualification.gate("boot_check"):
        raise ValueError("boom")
    with (
        pytest.raises(QualificationError, match="session is failed"),
        qualification.gate("tool_json_reasoning_parser"),
    ):
        pass
    assert receipt(tmp_path)["failing_gate"] == "boot_check"


def test_gate_before_open_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(QualificationError, match="not open"), session(tmp_path).gate("boot_check"):
        pass


def test_keyboard_interrupt_leaves_the_gate_named_and_status_interrupted(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), session(tmp_path) as qualification:
        with qualification.gate("boot_check"):
            pass
        with qualification.gate("tool_json_reasoning_parser"):
            raise KeyboardInterrupt
    document = receipt(tmp_path)
    assert (document["verdict"], document["failing_gate"], document["status"]) == (
        NOT_QUALIFIED,
        "tool_json_reasoning_parser",
        "interrupted",
    )


def test_callable_form_records_what_the_body_returns(tmp_path: Path) -> None:
    with session(tmp_path) as qualification:
        assert qualification.run("boot_check", lambda: {"up": True}) == {"up": True}
        qualification.run("tool_json_reasoning_parser", lambda: None)
        qualification.run("eos", lambda: {"finish_reason": "stop"})
    assert json.loads((tmp_path / "eos.json").read_text())["record"] == {"finish_reason": "stop"}


def test_gate_names_must_be_usable_as_file_names(tmp_path: Path) -> None:
    with pytest.raises(QualificationError, match="cannot be a file name"):
        QualificationSession(tmp_path, [GateSpec("../escape", 1)])
    with pytest.raises(QualificationError, match="reserved"):
        QualificationSession(tmp_path, [GateSpec("receipt", 1)])


def test_boot_failure_is_in_the_receipt(tmp_path: Path) -> None:
    def broken_boot() -> object:
        raise RuntimeError("engine did not become healthy")

    with pytest.raises(RuntimeError), session(tmp_path, boot=broken_boot):
        pytest.fail("the body must not run when boot fails")
    document = receipt(tmp_path)
    assert (document["status"], document["failing_gate"], document["verdict"]) == (
        "boot-failed",
        "boot_check",
        NOT_QUALIFIED,
    )
    assert "engine did not become healthy" in str(document["reasons"])


def test_closing_attaches_receipt_checkpoints_and_gate_files_to_the_evidence(tmp_path: Path) -> None:
    recorder = NoteRecorder()
    with session(tmp_path / "release", recorder=recorder) as qualification:
        for spec in GATES:
            qualification.run(spec.name, lambda: {"ok": True})
    prefix = "qualification-release"
    assert set(recorder.attachments) == {
        f"{prefix}-receipt.json",
        f"{prefix}-checkpoints.jsonl",
        *(f"{prefix}-{spec.name}.json" for spec in GATES),
    }
    assert (
        recorder.attachments[f"{prefix}-receipt.json"] == (tmp_path / "release" / "receipt.json").read_bytes()
    )
    note = recorder.notes[prefix]
    assert isinstance(note, dict)
    assert (note["verdict"], note["failing_gate"]) == (QUALIFIED, None)


def test_gate_evidence_is_redacted(tmp_path: Path) -> None:
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
    qualification: QualificationSession[None] = QualificationSession(tmp_path, [GateSpec("only", 1)]).open()
    with qualification.gate("only") as gate:
        gate.record({"log": f"token {token}"})
    assert token not in (tmp_path / "only.json").read_text()
