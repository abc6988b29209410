"""pytest hooks of pytest-specgate. Thin by design: logic lives in the modules they call.

pytest imports this module for every command, so it imports only pytest, the marker texts
(``contracts.markers``) and the stash keys; settings, host facts, hardware verdicts, run
modes and evidence load in the hook that first needs them. The fixtures live in
``plugin.fixtures``, registered below through ``pytest_plugins``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_specgate.contracts import markers as marker_docs
from pytest_specgate.evidence import watch_imports
from pytest_specgate.plugin.stash import (
    AC_KEY,
    COLLECTOR_KEY,
    CURRENT_ITEM_KEY,
    DECISION_KEY,
    DEFAULT_HOST_FACTS_KEY,
    ENGINE_CHOICE_KEY,
    HOST_FACTS_KEY,
    HOST_PROVENANCE_KEY,
    IMPORT_MARK_KEY,
    PLAN_KEY,
    PROJECT_KEY,
    RECORDER_KEY,
    REDACTOR_KEY,
    RUN_COLLECTION_KEY,
    SELECTION_KEY,
    SETTINGS_KEY,
    SIGNED_KEY,
    SIGNING_KEY,
    VERDICT_KEY,
)

if TYPE_CHECKING:
    from pytest_specgate.contracts.acceptance import AcceptanceCriterion
    from pytest_specgate.contracts.hardware import HardwareVerdict
    from pytest_specgate.contracts.host import HostFacts, HostProvenance
    from pytest_specgate.contracts.runmode import RunDecision
    from pytest_specgate.engines.config import EngineChoice
    from pytest_specgate.evidence import EvidenceCollector, Redactor, SigningKey
    from pytest_specgate.selection.collection import SpecPlan
    from pytest_specgate.selection.settings import ProjectSettings, SpecgateSettings

pytest_plugins = ["pytest_specgate.plugin.fixtures"]

IMPORTS: Final = watch_imports()
"""Sees every module imported from here on, so run provenance judges one that later leaves
``sys.modules`` too."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_specgate.plugin.hookspecs import SpecgateHookSpecs

    pluginmanager.add_hookspecs(SpecgateHookSpecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specgate", "executable acceptance criteria (pytest-specgate)")
    group.addoption(
        "--specgate-require", action="append", dest="specgate_require", metavar="AC", default=[],
        help="AC id (repeatable) or 'all': these specs must run; on a host that does not match "
             "their hardware marker they ERROR instead of skipping.",
    )
    group.addoption(
        "--specgate-diagnostic", action="store_true", dest="specgate_diagnostic", default=False,
        help="run hardware specs on any host; every evidence record says qualifying: false.",
    )
    group.addoption(
        "--specgate-host-facts", dest="specgate_host_facts", metavar="FILE", default=None,
        help="JSON file of host facts that replaces the hardware probe (simulate an M4 or a GB10).",
    )
    group.addoption("--specgate-evidence", dest="specgate_evidence", metavar="DIR", default=None,
                    help=marker_docs.EVIDENCE_HELP)
    group.addoption(
        "--specgate-allow-dirty", action="store_true", dest="specgate_allow_dirty", default=False,
        help="let evidence from a dirty git working tree count as qualifying.",
    )
    group.addoption("--specgate-engine", dest="specgate_engine", metavar="BACKEND", default=None,
                    help=marker_docs.ENGINE_HELP)
    group.addoption("--specgate-endpoint", dest="specgate_endpoint", metavar="URL", default=None,
                    help=marker_docs.ENDPOINT_HELP)
    group.addoption(
        "--specgate-endpoint-for", action="append", dest="specgate_endpoint_for", metavar="CHANGES=URL",
        default=[],
        help="CHANGES=URL (repeatable): the running server that serves the endpoint configuration "
             "boot_engine(**CHANGES) or shared_engine(**CHANGES) asks for, e.g. "
             "--specgate-endpoint-for=draft=none,num_draft_tokens=none=http://127.0.0.1:8001 for the "
             "baseline; without one such a request on the endpoint backend is refused.",
    )
    group.addoption("--specgate-duration-scale", dest="specgate_duration_scale", metavar="FACTOR",
                    default=None, help=marker_docs.DURATION_SCALE_HELP)
    group.addoption("--specgate-confidence-level", dest="specgate_confidence_level", metavar="LEVEL",
                    default=None, help=marker_docs.CONFIDENCE_LEVEL_HELP)
    group.addoption(
        "--specgate-engine-option", action="append", dest="specgate_engine_option", metavar="KEY=VALUE",
        default=[],
        help="KEY=VALUE (repeatable): a backend option set on every engine of the run, over the "
             "engine marker; VALUE is read as JSON when it parses (e.g. faults='[\"corrupt-spec\"]').",
    )
    group.addoption("--specgate-vllm-python", dest="specgate_vllm_python", metavar="PYTHON",
                    default=None, help=marker_docs.VLLM_PYTHON_HELP)
    group.addoption(
        "--specgate-sign-key", dest="specgate_sign_key", metavar="PATH", default=None,
        help="Ed25519 private key (PEM, or OpenSSH from ssh-keygen -t ed25519) that signs the bundle "
             "at session end (statement.intoto.dsse.json); passphrase from $SPECGATE_SIGN_PASSPHRASE.",
    )
    group.addoption(
        "--specgate-record-reference", dest="specgate_record_reference", metavar="DIR", default=None,
        help="Record reference outputs into DIR instead of comparing with them: specs that check "
             "'unchanged from the build before' (SPEC-028 FR-1) ask the engine configured as that "
             "build and write DIR/<name>.json plus DIR/SHA256SUMS (ship them in fixtures/references/).",
    )
    # Settings that are options and ini values share one help text each (contracts.markers).
    parser.addini("specgate_evidence", marker_docs.EVIDENCE_HELP, default=None)
    parser.addini("specgate_vllm_python", marker_docs.VLLM_PYTHON_HELP, default=None)
    parser.addini("specgate_engine", marker_docs.ENGINE_HELP, default=None)
    parser.addini("specgate_endpoint", marker_docs.ENDPOINT_HELP, default=None)
    parser.addini("specgate_duration_scale", marker_docs.DURATION_SCALE_HELP, default=None)
    parser.addini("specgate_confidence_level", marker_docs.CONFIDENCE_LEVEL_HELP, default=None)


@contextlib.contextmanager
def input_errors_stop_the_run() -> Iterator[None]:
    """The one place a :class:`SpecgateInputError` (bad options, markers, files, host facts)
    becomes the ``pytest.UsageError`` pytest stops on with its one line and exit 4."""
    from pytest_specgate.contracts.errors import SpecgateInputError

    try:
        yield
    except SpecgateInputError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    from pytest_specgate.plugin.termination import install_sigterm_teardown
    from pytest_specgate.selection.settings import load_project_settings, resolve_settings

    config.stash[IMPORT_MARK_KEY] = IMPORTS.mark()
    for doc in marker_docs.MARKER_DOCS:
        config.addinivalue_line("markers", doc)
    restore_sigterm = install_sigterm_teardown()
    if restore_sigterm is not None:
        config.add_cleanup(restore_sigterm)
    with input_errors_stop_the_run():
        config.stash[SETTINGS_KEY] = resolve_settings(config)
        config.stash[PROJECT_KEY] = load_project_settings(_pyproject(config))
        settings = config.stash[SETTINGS_KEY]
        _check_run_engines(settings)
        if settings.evidence_dir is not None and not hasattr(config, "workerinput"):
            if settings.sign_key is not None:
                config.stash[SIGNING_KEY] = _signing_key(settings.sign_key)
            collector = _evidence_collector(config, settings, settings.evidence_dir)
            config.stash[COLLECTOR_KEY] = collector
            config.pluginmanager.register(collector, "specgate-evidence")


def _check_run_engines(settings: SpecgateSettings) -> None:
    from pytest_specgate.engines.config import check_run_engines

    check_run_engines(settings.engines)


def _signing_key(path: Path) -> SigningKey:
    """Read (and check) the key before any test runs, not after a long qualification run."""
    from pytest_specgate.contracts.errors import SpecgateInputError
    from pytest_specgate.evidence import SigningError, load_signing_key

    try:
        return load_signing_key(path, os.environ)
    except SigningError as exc:
        raise SpecgateInputError(f"--specgate-sign-key: {exc}") from None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Sign the bundle the evidence collector has just written (controller only); on an xdist
    worker, ship the project files it imported for source binding."""
    config = session.config
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None and config.stash[SETTINGS_KEY].evidence_dir is not None:
        from pytest_specgate.evidence import IMPORTED_FILES_KEY, git_top, imported_source_files

        imported = imported_source_files(sys.modules, [item.path for item in session.items],
                                         config.rootpath)
        workeroutput[IMPORTED_FILES_KEY] = sorted(str(path) for path in imported)
        from pytest_specgate.evidence import FOREIGN_MODULES_KEY, foreign_modules, interpreter_locations

        locations = interpreter_locations(git_top(config.rootpath.resolve()))
        workeroutput[FOREIGN_MODULES_KEY] = foreign_modules(_imported_modules(config, worker=True), locations)
    key = config.stash.get(SIGNING_KEY, None)
    collector = config.stash.get(COLLECTOR_KEY, None)
    if key is None or collector is None or collector.bundle is None:
        return
    from pytest_specgate.evidence import SigningError, sign_bundle

    try:
        config.stash[SIGNED_KEY] = sign_bundle(collector.bundle.path, key, collector.redactor)
    except SigningError as exc:
        config.stash[SIGNED_KEY] = str(exc)


def pytest_unconfigure(config: pytest.Config) -> None:
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is not None:
        del config.stash[COLLECTOR_KEY]
        config.pluginmanager.unregister(collector)
        collector.close()


def _evidence_collector(config: pytest.Config, settings: SpecgateSettings,
                        evidence_dir: Path) -> EvidenceCollector:
    """The bundle writer of this run: created on the controller only, never on xdist workers."""
    from pytest_specgate.evidence import EvidenceCollector
    from pytest_specgate.plugin.census import take_census
    from pytest_specgate.plugin.hookspecs import SpecgateHookSpecs

    facts = session_host_facts(config)
    provenance = session_host_provenance(config)
    return EvidenceCollector(
        evidence_dir=evidence_dir,
        host_facts=facts.to_dict(),
        host_provenance=provenance,
        diagnostic=settings.run.diagnostic,
        allow_dirty=settings.allow_dirty,
        rootdir=config.rootpath,
        redact_patterns=config.stash[PROJECT_KEY].redact_patterns,
        host_summary=facts.summary(),
        duration_scale=settings.duration_scale,
        census=lambda: take_census(config, SpecgateHookSpecs, config.stash.get(RUN_COLLECTION_KEY, None),
                                   config.stash[PROJECT_KEY].spec_paths),
        run_provenance=lambda: _run_provenance(config),
    )


def _run_provenance(config: pytest.Config) -> dict[str, Any]:
    """What shaped this run from outside the repository (``evidence._run_provenance``)."""
    from importlib import metadata

    from pytest_specgate.contracts.markers import ENTRY_POINT_GROUP
    from pytest_specgate.evidence import collect_run_provenance, git_top

    collector = config.stash[COLLECTOR_KEY]
    return collect_run_provenance(
        rootdir=config.rootpath,
        repo=git_top(config.rootpath.resolve()),
        distinfo=config.pluginmanager.list_plugin_distinfo(),
        conftests=_conftest_files(config),
        backends={entry.name: None if entry.dist is None else entry.dist.name
                  for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)},
        environ=os.environ,
        modules=_imported_modules(config, worker=False),
        sys_path=sys.path,
        redact=collector.redactor.text,
    )


def _imported_modules(config: pytest.Config, *, worker: bool) -> dict[str, object]:
    from pytest_specgate.evidence import option_plugin_names, run_modules

    mark = config.stash.get(IMPORT_MARK_KEY, None)
    watched, files = IMPORTS.since(mark) if mark is not None else ([], [])
    return run_modules(sys.modules, watched, files, config.pluginmanager.get_plugins(),
                       option_plugin_names(config.invocation_params.args, os.environ), worker=worker)


def _conftest_files(config: pytest.Config) -> list[Path]:
    files = (getattr(plugin, "__file__", None) for plugin in config.pluginmanager.get_plugins())
    return [Path(where) for where in files if isinstance(where, str) and Path(where).name == "conftest.py"]


def session_redactor(config: pytest.Config) -> Redactor:
    """The one redaction function every evidence write of this process goes through."""
    if REDACTOR_KEY not in config.stash:
        collector = config.stash.get(COLLECTOR_KEY, None)
        if collector is not None:
            config.stash[REDACTOR_KEY] = collector.redactor
        else:
            from pytest_specgate.evidence import build_redactor

            patterns = config.stash[PROJECT_KEY].redact_patterns
            config.stash[REDACTOR_KEY] = build_redactor(config.rootpath, patterns)
    return config.stash[REDACTOR_KEY]


def _pyproject(config: pytest.Config) -> Path | None:
    if config.inipath is not None and config.inipath.name == "pyproject.toml":
        return config.inipath
    candidate = config.rootpath / "pyproject.toml"
    return candidate if candidate.is_file() else None


@pytest.hookimpl(trylast=True)
def pytest_specgate_host_facts(config: pytest.Config) -> HostFacts:
    from pytest_specgate.selection.host_probe import load_host_facts, probe_host

    path = config.stash[SETTINGS_KEY].host_facts_file
    facts = load_host_facts(path) if path is not None else probe_host()
    config.stash[DEFAULT_HOST_FACTS_KEY] = (facts, _json_shape(facts))
    return facts


def _json_shape(facts: HostFacts) -> dict[str, Any]:
    """A deep, detached copy of the facts' JSON form: what an edit is compared against."""
    shape: dict[str, Any] = json.loads(json.dumps(facts.to_dict(), default=str))
    return shape


def session_host_facts(config: pytest.Config) -> HostFacts:
    """The one host-facts object of this session: hook result, user edits, validated.

    Its provenance (``session_host_provenance``) is decided here from what happened, not
    from what the facts say about themselves.
    """
    if HOST_FACTS_KEY not in config.stash:
        facts, provenance = _resolve_host_facts(config)
        config.stash[HOST_FACTS_KEY] = dataclasses.replace(facts, source=provenance.source_label)
        config.stash[HOST_PROVENANCE_KEY] = provenance
    return config.stash[HOST_FACTS_KEY]


def session_host_provenance(config: pytest.Config) -> HostProvenance:
    session_host_facts(config)
    return config.stash[HOST_PROVENANCE_KEY]


def _resolve_host_facts(config: pytest.Config) -> tuple[HostFacts, HostProvenance]:
    from pytest_specgate.contracts.errors import SpecgateInputError
    from pytest_specgate.contracts.host import HostFacts, HostProvenance, host_facts_from_dict

    hook = config.hook
    try:
        answered = hook.pytest_specgate_host_facts(config=config)
    except SpecgateInputError as exc:
        raise SpecgateInputError(f"--specgate-host-facts: {exc}") from None
    if not isinstance(answered, HostFacts):
        raise SpecgateInputError(
            f"pytest_specgate_host_facts in {_implementers(config, 'pytest_specgate_host_facts')} "
            f"returned {type(answered).__name__}, expected pytest_specgate.contracts.host.HostFacts"
        )
    before = _json_shape(answered)
    edited = copy.deepcopy(before)
    hook.pytest_specgate_update_host_facts(config=config, facts=edited)
    try:
        facts = answered if edited == before else host_facts_from_dict(
            edited, where="pytest_specgate_update_host_facts", source=answered.source)
    except SpecgateInputError as exc:
        raise SpecgateInputError(f"--specgate-host-facts: {exc}") from None
    default, default_shape = config.stash.get(DEFAULT_HOST_FACTS_KEY, (None, None))
    # The default's own object, unchanged: anything else was answered (or rewritten) by a hook.
    by_default = default is answered and before == default_shape
    path = config.stash[SETTINGS_KEY].host_facts_file
    if edited != before:
        provenance = HostProvenance("edited", _implementers(config, "pytest_specgate_update_host_facts"))
    elif not by_default:
        provenance = HostProvenance("hook", _implementers(config, "pytest_specgate_host_facts"))
    elif path is not None:
        provenance = HostProvenance("file", path.name)
    else:
        provenance = HostProvenance("probe", None, answered.probed_with)
    return facts, provenance


def _implementers(config: pytest.Config, hook_name: str) -> str:
    """The plugins and conftests (relative to the rootdir) implementing one of our hooks."""
    names = []
    for impl in getattr(config.hook, hook_name).get_hookimpls():
        if impl.plugin is sys.modules[__name__]:
            continue
        where = getattr(impl.plugin, "__file__", None)
        if where is None:
            names.append(impl.plugin_name)
            continue
        try:
            names.append(Path(where).resolve().relative_to(config.rootpath.resolve()).as_posix())
        except ValueError:
            names.append(Path(where).name)
    return ", ".join(names) or "a hook wrapper"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from pytest_specgate.contracts.errors import SpecgateInputError
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
    from pytest_specgate.contracts.errors import SpecgateInputError
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
    from pytest_specgate.contracts.errors import SpecgateInputError
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
    from pytest_specgate.contracts.errors import SpecgateInputError
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
        from pytest_specgate.contracts.errors import SpecgateInputError

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
    verdict = item.stash.get(VERDICT_KEY, None)
    criterion = item.stash.get(AC_KEY, None)
    recorder = item.stash.get(RECORDER_KEY, None)
    from pytest_specgate.plugin.used_engines import engine_entries

    engines = engine_entries(item)
    if criterion is None and verdict is None and recorder is None and not engines:
        return
    from pytest_specgate.contracts.payload import SPEC_PROPERTY, spec_payload

    redact = session_redactor(item.config).value
    payload = spec_payload(
        item.nodeid,
        ac=criterion.to_dict() if criterion is not None else None,
        verdict=verdict,
        decision=decision,
        recorded=recorder.to_properties() if recorder is not None else None,
        engines=[redact(entry) for entry in engines],
    )
    report.user_properties = [*report.user_properties, (SPEC_PROPERTY, payload)]


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    settings = config.stash[SETTINGS_KEY]
    if not (settings.run.required or settings.run.diagnostic or settings.host_facts_file):
        return None
    with input_errors_stop_the_run():
        facts = session_host_facts(config)
    provenance = session_host_provenance(config).label() or "probe"
    return [f"specgate: host {facts.summary()} ({provenance}); mode: {settings.run.label}"]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    signed = config.stash.get(SIGNED_KEY, None)
    if isinstance(signed, str):
        terminalreporter.write_line(f"specgate: the bundle is NOT signed: {signed}", red=True)
    elif signed is not None:
        statement = signed.statement
        terminalreporter.write_line(f"specgate: signed {signed.path.name} with {signed.keyid} "
                                    f"({len(statement.files)} files, commit {statement.commit})")
    if not config.stash[SETTINGS_KEY].wants_payload:
        return
    from pytest_specgate.contracts.payload import mismatched_hardware_runs, unbundled_evidence

    reports = [report for reports in terminalreporter.stats.values() for report in reports]
    if config.stash[SETTINGS_KEY].evidence_dir is not None:
        unbundled = unbundled_evidence(reports)
        if unbundled:
            terminalreporter.write_line(
                f"specgate: {len(unbundled)} test(s) recorded evidence but have no @pytest.mark.ac, "
                "so no bundle holds it:",
                yellow=True,
            )
            for entry in unbundled:
                terminalreporter.write_line(f"  {entry.describe()}", yellow=True)
    if not config.stash[SETTINGS_KEY].run.diagnostic:
        return
    mismatched = mismatched_hardware_runs(reports)
    terminalreporter.write_line(
        f"specgate: DIAGNOSTIC run: nothing here qualifies ({len(mismatched)} hardware spec(s) "
        "ran on a host that does not match)",
        yellow=True,
    )


def duration_scale_of(config: pytest.Config) -> float:
    """``--specgate-duration-scale``: 1 unless shortened (and then nothing qualifies)."""
    return config.stash[SETTINGS_KEY].duration_scale


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
    from pytest_specgate.contracts.progress import reporting_progress
    from pytest_specgate.plugin.terminal import progress_factory

    item.config.stash[CURRENT_ITEM_KEY] = item
    try:
        with reporting_progress(progress_factory(item)):
            return (yield)
    finally:
        del item.config.stash[CURRENT_ITEM_KEY]


