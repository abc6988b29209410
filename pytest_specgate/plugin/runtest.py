"""Run phase: a test's run decision applied at setup (skip or error), its soft checks failed
after the body, its long steps given progress lines, and its spec payload attached to the
setup and teardown reports (``contracts.payload``), which the evidence collector reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_specgate.contracts.progress import reporting_progress
from pytest_specgate.plugin.bundle import session_redactor
from pytest_specgate.plugin.stash import (
    AC_KEY,
    CURRENT_ITEM_KEY,
    DECISION_KEY,
    FIRST_PAYLOAD_KEY,
    RECORDER_KEY,
    SETTINGS_KEY,
    VERDICT_KEY,
)
from pytest_specgate.plugin.terminal import progress_factory
from pytest_specgate.plugin.used_engines import engine_entries

if TYPE_CHECKING:
    from pytest_specgate.contracts.runmode import RunDecision


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    decision = item.stash.get(DECISION_KEY, None)
    if decision is None:
        return
    if decision.skips:
        pytest.skip(f"specgate: {decision.message}")
    if decision.errors:
        pytest.fail(f"specgate: {item.nodeid}: {decision.message}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and call.excinfo is not None:
        from pytest_specgate.contracts.engine import EngineBootError, boot_failure_text

        if call.excinfo.errisinstance(EngineBootError):
            report.longrepr = boot_failure_text(item.nodeid, call.excinfo.value)
    decision = item.stash.get(DECISION_KEY, None)
    if decision is not None and decision.skips and report.skipped and isinstance(report.longrepr, tuple):
        # Point the skip at the spec, as pytest's skipping plugin does for skip markers.
        path, line, _ = item.reportinfo()
        report.longrepr = (str(path), (line or 0) + 1, report.longrepr[2])
    # The payload rides on the setup report (so a run interrupted mid-test still knows the
    # test's AC) and on the teardown report, which carries everything the test recorded;
    # nobody reads it when there is no evidence folder and no diagnostic summary.
    if call.when != "call" and item.config.stash[SETTINGS_KEY].wants_payload:
        _attach_payload(item, decision, report)
    return report


def _attach_payload(item: pytest.Item, decision: RunDecision | None, report: pytest.TestReport) -> None:
    """The setup report's payload is built whole and kept; the teardown's takes the test's own
    parts from it (``later_phase_payload``) and adds what the test recorded."""
    verdict = item.stash.get(VERDICT_KEY, None)
    criterion = item.stash.get(AC_KEY, None)
    recorder = item.stash.get(RECORDER_KEY, None)
    engines = engine_entries(item)
    if criterion is None and verdict is None and recorder is None and not engines:
        return
    from pytest_specgate.contracts.payload import SPEC_PROPERTY, later_phase_payload, spec_payload

    redact = session_redactor(item.config).value
    recorded = recorder.to_properties() if recorder is not None else None
    redacted_engines = [redact(entry) for entry in engines]
    first = item.stash.get(FIRST_PAYLOAD_KEY, None)
    if first is None:
        payload = item.stash[FIRST_PAYLOAD_KEY] = spec_payload(
            item.nodeid,
            ac=criterion.to_dict() if criterion is not None else None,
            verdict=verdict,
            decision=decision,
            recorded=recorded,
            engines=redacted_engines,
        )
    else:
        payload = later_phase_payload(first, recorded, redacted_engines)
    report.user_properties = [*report.user_properties, (SPEC_PROPERTY, payload)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Soft checks: the test body runs to its end, then its missed thresholds fail it at once."""
    recorder = item.stash.get(RECORDER_KEY, None)
    try:
        result = yield
    except BaseException as error:
        missed = recorder.take_new_misses() if recorder is not None else ()
        if missed:
            error.add_note(f"specgate soft checks missed before this error: {'; '.join(missed)}")
        raise
    if recorder is not None:
        recorder.fail_on_new_misses()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Remember the running test, so an engine handed out by the pool is recorded for it, and
    let its long steps (engine boot, paired rounds, sustained window) show progress."""
    item.config.stash[CURRENT_ITEM_KEY] = item
    try:
        with reporting_progress(progress_factory(item)):
            return (yield)
    finally:
        del item.config.stash[CURRENT_ITEM_KEY]
