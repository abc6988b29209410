"""Collection phase: each test's markers validated once, its AC, hardware verdict, engine
choice and run decision stored on the item; the selection (deselected and selected tests of
ACs) handed to the evidence collector; xdist's load order by declared cost.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_specgate.contracts import markers as marker_docs
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.plugin.host_facts import session_host_facts
from pytest_specgate.plugin.options import input_errors_stop_the_run
from pytest_specgate.plugin.stash import (
    AC_KEY,
    COLLECTOR_KEY,
    DECISION_KEY,
    ENGINE_CHOICE_KEY,
    PLAN_KEY,
    PROJECT_KEY,
    RUN_COLLECTION_KEY,
    SELECTION_KEY,
    SETTINGS_KEY,
    VERDICT_KEY,
)

if TYPE_CHECKING:
    from pytest_specgate.contracts.acceptance import AcceptanceCriterion
    from pytest_specgate.contracts.hardware import HardwareVerdict
    from pytest_specgate.contracts.runmode import RunDecision
    from pytest_specgate.engines.config import EngineChoice
    from pytest_specgate.selection.collection import SpecPlan
    from pytest_specgate.selection.settings import ProjectSettings, SpecgateSettings


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from pytest_specgate.contracts.runmode import RunAction, RunDecision, RunMode
    from pytest_specgate.selection.collection import SpecPlan

    # On an xdist worker a UsageError would crash the worker, not stop the run: there
    # the problem becomes a setup ERROR of the tests it concerns, failing just as closed.
    on_worker = hasattr(config, "workerinput")

    def errored(exc: SpecgateInputError) -> RunDecision:
        return RunDecision(RunAction.ERROR, RunMode.DEFAULT, f"usage error: {exc}")

    plan = config.stash[PLAN_KEY] = SpecPlan()
    costs: dict[int, float] = {}
    with input_errors_stop_the_run():
        for index, item in enumerate(items):
            try:
                cost = _prepare_item(item, config, plan)
            except SpecgateInputError as exc:
                if not on_worker:
                    raise
                item.stash[DECISION_KEY] = errored(exc)
                continue
            if cost is not None:
                costs[index] = cost
        try:
            _check_required_present(config.stash[SETTINGS_KEY].run.required - {"all"}, items)
        except SpecgateInputError as exc:
            if not on_worker:
                raise
            for item in items:
                item.stash[DECISION_KEY] = errored(exc)
    if costs and on_worker and config.workerinput.get(_DIST_INPUT) == "load":  # type: ignore[attr-defined]
        items[:] = _xdist_load_order(config, items, costs)


_DIST_INPUT: Final = "specgate_dist"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each xdist worker the controller's ``--dist`` mode (workers see ``no``)."""
    node.workerinput[_DIST_INPUT] = node.config.getoption("dist", None)


def _xdist_load_order(config: pytest.Config, items: list[pytest.Item],
                      costs: dict[int, float]) -> list[pytest.Item]:
    """Every worker orders alike, so the collections still agree; xdist then hands out the
    longest specs first, one per worker."""
    from pytest_specgate.selection.collection import costliest_spread, load_chunk_size

    workers = int(config.workerinput["workercount"])  # type: ignore[attr-defined]
    chunk = load_chunk_size(len(items), workers, config.getoption("maxschedchunk", None))
    return costliest_spread(items, costs, workers=workers, chunk=chunk)


_OWN_MARKERS: Final = ("ac", "hardware", "engine", marker_docs.COST_MARKER)


def _closest_markers(item: pytest.Item) -> dict[str, pytest.Mark]:
    """The closest ``ac``, ``hardware``, ``engine`` and cost markers, in one walk up the node chain."""
    found: dict[str, pytest.Mark] = {}
    for mark in item.iter_markers():
        if mark.name in _OWN_MARKERS and mark.name not in found:
            found[mark.name] = mark
    return found


def _prepare_item(item: pytest.Item, config: pytest.Config, plan: SpecPlan) -> float | None:
    """Validate a test's markers, store its AC, hardware verdict and run decision, and return
    its declared cost (None when it declares none)."""
    from pytest_specgate.contracts.runmode import decide_run
    from pytest_specgate.selection.collection import declared_cost

    settings = config.stash[SETTINGS_KEY].run
    markers = _closest_markers(item)
    ac_id = None
    if "ac" in markers:
        criterion = plan.criterion(markers["ac"].args, markers["ac"].kwargs, item.nodeid)
        _check_waiver_declared(criterion, item.nodeid, config.stash[PROJECT_KEY])
        item.stash[AC_KEY] = criterion
        ac_id = criterion.id
    required = settings.is_required(ac_id)
    if required and settings.diagnostic:
        raise SpecgateInputError(
            f"{item.nodeid}: --specgate-require and --specgate-diagnostic both apply; a "
            "required spec must qualify, a diagnostic run never does: choose one"
        )
    verdict = None
    if "hardware" in markers:
        marker = markers["hardware"]
        verdict = item.stash[VERDICT_KEY] = plan.verdict(
            marker.args, marker.kwargs, lambda: _hardware_verdict(marker, item.nodeid, config))
    if "engine" in markers:
        item.stash[ENGINE_CHOICE_KEY] = _marked_engine_choice(item, config.stash[SETTINGS_KEY])
    item.stash[DECISION_KEY] = decide_run(verdict, required=required, diagnostic=settings.diagnostic)
    cost = markers.get(marker_docs.COST_MARKER)
    return None if cost is None else declared_cost(cost.args, cost.kwargs, item.nodeid)


def _hardware_verdict(marker: pytest.Mark, nodeid: str, config: pytest.Config) -> HardwareVerdict:
    from pytest_specgate.selection.hardware import evaluate_requirement, requirement_from_marker

    try:
        requirement = requirement_from_marker(marker.args, marker.kwargs, config.stash[PROJECT_KEY].profiles)
    except SpecgateInputError as exc:
        raise SpecgateInputError(f"{nodeid}: @pytest.mark.hardware: {exc}") from None
    return evaluate_requirement(requirement, session_host_facts(config), os.environ)


def _marked_engine_choice(item: pytest.Item, settings: SpecgateSettings) -> EngineChoice:
    """The test's ``@pytest.mark.engine`` resolved now, so a bad one stops collection naming the
    test; a marker that keeps the test off the asked-for backend is a warning naming it."""
    from pytest_specgate.engines.config import engine_choice_for_node

    choice = engine_choice_for_node(item, settings.engines)
    conflict = choice.conflict()
    if conflict is not None:
        item.warn(pytest.PytestWarning(f"specgate: {item.nodeid}: {conflict}"))
    return choice


def _check_waiver_declared(criterion: AcceptanceCriterion, nodeid: str,
                           project: ProjectSettings) -> None:
    """A waiver must move the AC to one of the project's declared merge gates."""
    if criterion.waived_to is None:
        return
    from pytest_specgate.contracts.gates import undeclared_gate_problem

    problem = undeclared_gate_problem(criterion.waived_to, project.gates, project.declared_in)
    if problem is not None:
        raise SpecgateInputError(f"{nodeid}: @pytest.mark.ac(waived_to={criterion.waived_to!r}): {problem}")


def _check_required_present(required: frozenset[str], items: list[pytest.Item]) -> None:
    if not required:
        return
    present = {criterion.id for item in items if (criterion := item.stash.get(AC_KEY, None))}
    missing = sorted(required - present)
    if missing:
        raise SpecgateInputError(
            f"--specgate-require {', '.join(missing)}: no selected test has "
            f"@pytest.mark.ac({missing[0]!r}); a required criterion must run"
        )


def _item_ac_id(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("ac")
    return marker.args[0] if marker is not None and marker.args and isinstance(marker.args[0], str) else None


def pytest_itemcollected(item: pytest.Item) -> None:
    """Remember each collected test before any deselection: the census then collects only the
    files this run left out (``plugin.census``). Not on xdist workers, whose controller
    takes a census of everything."""
    config = item.config
    if config.stash[SETTINGS_KEY].evidence_dir is None or hasattr(config, "workerinput"):
        return
    if RUN_COLLECTION_KEY not in config.stash:
        from pytest_specgate.plugin.census import RunCollection

        config.stash[RUN_COLLECTION_KEY] = RunCollection()
    config.stash[RUN_COLLECTION_KEY].add(item)


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    """Remember deselected tests of ACs (``-k``, ``-m``, ``--deselect``): their AC is incomplete."""
    deselected = {item.nodeid: ac for item in items if (ac := _item_ac_id(item)) is not None}
    if deselected:
        from pytest_specgate.evidence import SelectionFacts

        config = items[0].config
        current = config.stash.get(SELECTION_KEY, SelectionFacts())
        config.stash[SELECTION_KEY] = current.merged(SelectionFacts(deselected=deselected))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Hand the selection to the evidence collector (here, or via ``workeroutput`` from an xdist worker)."""
    config = session.config
    collector = config.stash.get(COLLECTOR_KEY, None)
    workeroutput = getattr(config, "workeroutput", None)
    if config.stash[SETTINGS_KEY].evidence_dir is None or (collector is None and workeroutput is None):
        return
    from pytest_specgate.evidence import SELECTION_WORKEROUTPUT, SelectionFacts

    selection = config.stash.get(SELECTION_KEY, SelectionFacts()).merged(SelectionFacts(
        args=tuple(str(arg) for arg in config.args),
        keyword=config.option.keyword or None,
        markexpr=config.option.markexpr or None,
        selected={item.nodeid: ac for item in session.items if (ac := _item_ac_id(item)) is not None},
    ))
    if collector is not None:
        collector.selection = collector.selection.merged(selection)
    if workeroutput is not None:
        workeroutput[SELECTION_WORKEROUTPUT] = selection.to_json()
