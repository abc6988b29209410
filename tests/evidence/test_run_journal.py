"""The run journal: appended events, folded by every reader of a receipt that says ``running``."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_specgate.evidence import LocalIdentity, build_redactor
from pytest_specgate.evidence._journal import JOURNAL_NAME, RunJournal, fold_journal, read_receipt
from pytest_specgate.evidence._nodeids import NodeIdRedactor

IDENTITY = LocalIdentity(
    user_names=("alice-ops",), host_names=("buildbox-7",), home_dirs=("/home/alice-ops",)
)


def _journal(run_dir: Path) -> RunJournal:
    redactor = build_redactor(Path("/srv/repo"), (), {}, IDENTITY)
    return RunJournal(run_dir / JOURNAL_NAME, NodeIdRedactor(redactor))


def _running_receipt(run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "receipt.json").write_text(json.dumps({
        "status": "running", "verdict": "NOT QUALIFIED", "running": [], "tests_finished": 0,
        "reasons": ["run in progress"], "updated_at": "2026-12-03T10:00:00Z",
    }))


def test_a_killed_run_names_the_tests_started_and_not_ended(tmp_path: Path) -> None:
    _running_receipt(tmp_path)
    journal = _journal(tmp_path)
    journal.started("t.py::test_a", "AC-1", "2026-12-03T10:00:01Z")
    journal.started("t.py::test_b[alice-ops]", "AC-2", "2026-12-03T10:00:02Z")
    journal.ended("t.py::test_a", 5, "2026-12-03T10:00:03Z")
    with (tmp_path / JOURNAL_NAME).open("a") as torn:
        torn.write('{"event":"start","nodeid":"t.py::te')
    receipt = read_receipt(tmp_path)
    assert receipt["running"] == [{"nodeid": "t.py::test_b[<USER>]", "ac": "AC-2"}]
    assert receipt["reasons"] == ["run in progress; running: t.py::test_b[<USER>]"]
    assert (receipt["tests_finished"], receipt["updated_at"]) == (5, "2026-12-03T10:00:03Z")
    assert "alice-ops" not in (tmp_path / JOURNAL_NAME).read_text()


def test_each_event_is_one_line_appended(tmp_path: Path) -> None:
    journal = _journal(tmp_path / "run")
    journal.started("t.py::test_a", None, "2026-12-03T10:00:01Z")
    journal.ended("t.py::test_a", 1, "2026-12-03T10:00:02Z")
    lines = (tmp_path / "run" / JOURNAL_NAME).read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["start", "end"]
    assert fold_journal("\n".join(lines)).running == ()
    journal.close(remove=True)
    assert not (tmp_path / "run" / JOURNAL_NAME).exists()


def test_a_receipt_that_is_no_longer_running_ignores_a_leftover_journal(tmp_path: Path) -> None:
    tmp_path.joinpath("receipt.json").write_text(json.dumps({"status": "finished", "running": []}))
    journal = _journal(tmp_path)
    journal.started("t.py::test_a", "AC-1", "2026-12-03T10:00:01Z")
    assert read_receipt(tmp_path) == {"status": "finished", "running": []}


def test_lines_that_name_no_test_are_skipped() -> None:
    state = fold_journal('[1, 2]\n{"event": "start"}\n{"event": "rename", "nodeid": "x"}\n'
                         '{"event": "start", "nodeid": "t.py::a", "ac": 7, "at": "T"}\n')
    assert state.running == (("t.py::a", None),)
    assert (state.tests_finished, state.updated_at) == (None, "T")


def test_an_ended_test_whose_node_id_the_redactor_changes_is_no_longer_running(tmp_path: Path) -> None:
    _running_receipt(tmp_path)
    journal = _journal(tmp_path)
    journal.started("t.py::test_b[alice-ops]", "AC-2", "2026-12-03T10:00:01Z")
    journal.ended("t.py::test_b[alice-ops]", 1, "2026-12-03T10:00:02Z")

    events = [json.loads(line) for line in (tmp_path / JOURNAL_NAME).read_text().splitlines()]
    assert [(event["event"], event["nodeid"]) for event in events] == [
        ("start", "t.py::test_b[<USER>]"), ("end", "t.py::test_b[<USER>]")]
    receipt = read_receipt(tmp_path)
    assert (receipt["running"], receipt["tests_finished"]) == ([], 1)
    assert receipt["reasons"] == ["run in progress; running: nothing"]


def test_each_line_is_the_canonical_json_of_its_event(tmp_path: Path) -> None:
    """The lines are formatted without a mapping to sort: they must still read as canonical JSON
    (keys sorted, compact, not ASCII-escaped), with quotes and backslashes in a node id escaped."""
    from pytest_specgate.evidence._jsonio import canonical_json

    journal = _journal(tmp_path)
    nodeid = 't.py::test_ü["a\\\\b"]'
    journal.started(nodeid, None, "2026-12-03T10:00:01Z")
    journal.started("t.py::test_a", "AC-1", "2026-12-03T10:00:02Z")
    journal.ended(nodeid, 7, "2026-12-03T10:00:03Z")
    assert (tmp_path / JOURNAL_NAME).read_text().splitlines() == [
        canonical_json({"event": "start", "nodeid": nodeid, "ac": None, "at": "2026-12-03T10:00:01Z"}),
        canonical_json({"event": "start", "nodeid": "t.py::test_a", "ac": "AC-1",
                        "at": "2026-12-03T10:00:02Z"}),
        canonical_json({"event": "end", "nodeid": nodeid, "finished": 7, "at": "2026-12-03T10:00:03Z"}),
    ]
