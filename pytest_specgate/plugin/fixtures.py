"""Every fixture of the plugin: evidence, duration scale, engines and qualification sessions.

Registered by the plugin's entry module (``pytest_plugins``), so ``-p no:specgate`` turns them
off with the hooks. Engines come from one pool per session (per xdist worker), torn down
in ``finally``; every engine handed out is recorded for the running test.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_specgate.plugin.bundle import session_redactor
from pytest_specgate.plugin.host_facts import session_host_facts
from pytest_specgate.plugin.options import duration_scale_of
from pytest_specgate.plugin.stash import (
    AC_KEY,
    COLLECTOR_KEY,
    CURRENT_ITEM_KEY,
    ENGINE_CHOICE_KEY,
    ENGINE_RECORDS_KEY,
    ITEM_ENGINES_KEY,
    RECORDER_KEY,
    SETTINGS_KEY,
)
from pytest_specgate.plugin.terminal import announce_masks
from pytest_specgate.plugin.used_engines import memory_ledger

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.engines import EngineConfig, EnginePool
    from pytest_specgate.evidence import EvidenceRecorder
    from pytest_specgate.qualification import QualificationFactory
    from pytest_specgate.selection.endpoint_routes import EndpointRoute

@pytest.fixture
def duration_scale(pytestconfig: pytest.Config) -> float:
    """``--specgate-duration-scale``: multiply long durations by it (1 on a qualifying run,
    e.g. 0.02 on the mock in CI); ``SustainedSettings(scale=duration_scale)`` does so."""
    return duration_scale_of(pytestconfig)


@pytest.fixture
def confidence_level(pytestconfig: pytest.Config) -> float:
    """``--specgate-confidence-level`` (ini ``specgate_confidence_level``, default 0.95): the level
    of every interval a spec computes, e.g. ``paired.speedup(confidence_level=confidence_level)``."""
    level: float = pytestconfig.stash[SETTINGS_KEY].confidence_level
    return level


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Iterator[EvidenceRecorder]:
    """Record measurements (``measure``, soft checks), artifacts (``attach``) and context (``note``).

    A missed ``at_least``/``at_most`` or a false ``check`` fails the test after its body ends.
    """
    from pytest_specgate.evidence import EvidenceRecorder

    config = request.config
    criterion = request.node.stash.get(AC_KEY, None)
    recorder = EvidenceRecorder(request.node.nodeid, lambda: session_redactor(config),
                                _staging_dir(config),
                                ac_id=criterion.id if criterion is not None else None,
                                confidence_level=config.stash[SETTINGS_KEY].confidence_level,
                                announce_secret=lambda value: announce_masks(config, [value]))
    request.node.stash[RECORDER_KEY] = recorder
    yield recorder
    recorder.fail_on_new_misses()


def _staging_dir(config: pytest.Config) -> Path | None:
    """Where this run stages attachments: the controller's collector knows, and tells xdist
    workers through ``workerinput``; without an evidence folder there is none."""
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is not None:
        return collector.staging
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    from pytest_specgate.evidence import WORKER_STAGING_KEY

    staging = workerinput.get(WORKER_STAGING_KEY)
    return Path(staging) if isinstance(staging, str) else None


@pytest.fixture(scope="session")
def specgate_engine_pool(pytestconfig: pytest.Config) -> Iterator[EnginePool]:
    """Every engine booted in this session; closed at session end, also on Ctrl-C.

    Every engine it hands out is recorded for the running test, fixture or not.
    """
    from pytest_specgate.engines.config import EnginePool
    from pytest_specgate.measure.progress import progress_ticker

    pool = EnginePool(on_handout=lambda config, engine: _record_engine(pytestconfig, config, engine,
                                                                       pooled=True),
                      watch_boot=progress_ticker, ledger=memory_ledger(pytestconfig))
    try:
        yield pool
    finally:
        pool.close_all()


@pytest.fixture(scope="session")
def tiny_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where ``tiny:<role>`` model references are built (once per content hash)."""
    return tmp_path_factory.getbasetemp() / "specgate-tiny-models"


@pytest.fixture
def engine_config(request: pytest.FixtureRequest, tiny_model_cache: Path) -> EngineConfig:
    """The engine this test asks for: ``@pytest.mark.engine`` over the command line."""
    from pytest_specgate.engines.backends import backend_named
    from pytest_specgate.engines.config import engine_choice_for_node

    settings = request.config.stash[SETTINGS_KEY]
    node = request.node
    assert isinstance(node, pytest.Item)
    choice = node.stash.get(ENGINE_CHOICE_KEY, None)
    if choice is None:
        choice = node.stash[ENGINE_CHOICE_KEY] = engine_choice_for_node(node, settings.engines)
    config = choice.config
    builds_tiny_models = backend_named(config.backend, node.nodeid).definition().builds_tiny_models
    if builds_tiny_models and config.option("model_cache") is None:
        config = config.with_options(model_cache=str(tiny_model_cache))
    if config.backend == "vllm" and settings.vllm_python and config.option("python") is None:
        config = config.with_options(python=settings.vllm_python)
    if settings.engine_options:
        config = config.with_options(**dict(settings.engine_options))
    _register_engine_secrets(request.config, config)
    compose = config.backend == "vllm" and config.option("mode") == "compose"
    if compose and config.option("host_facts") is None:
        # Compose eligibility judges the host the session's markers were judged against.
        config = config.with_options(host_facts=str(request.getfixturevalue("specgate_host_facts_file")))
    return config


def _register_engine_secrets(pytestconfig: pytest.Config, config: EngineConfig) -> None:
    """An engine's ``api_key`` and the password of its URL are secrets this run knows: masked
    in evidence and on the terminal, and announced to the CI runner."""
    from pytest_specgate.evidence import url_passwords

    api_key, url = config.option("api_key"), config.option("url")
    values = [api_key] if isinstance(api_key, str) else []
    values += url_passwords(url) if isinstance(url, str) else []
    redactor = session_redactor(pytestconfig)
    announce_masks(pytestconfig, [value for value in values if redactor.register_secret(value)])


@pytest.fixture(scope="session")
def specgate_host_facts_file(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This session's host facts (probe, ``--specgate-host-facts`` file or hook) as a file a backend reads."""
    path = tmp_path_factory.getbasetemp() / "specgate-host-facts.json"
    path.write_text(json.dumps(session_host_facts(pytestconfig).to_dict(), default=str), encoding="utf-8")
    return path


def engine_record(engine: Engine, config: EngineConfig) -> dict[str, Any]:
    """What evidence says about an engine: what was booted and what the server says it is."""
    from contextlib import closing

    from pytest_specgate.engines.client import ClientEngine, OpenAIClient
    from pytest_specgate.engines.identity import engine_entry, probe_identity

    if isinstance(engine, ClientEngine):
        identity = probe_identity(engine.client)
    else:
        with closing(OpenAIClient(engine.base_url)) as client:
            identity = probe_identity(client)
    return engine_entry(engine, config.backend, config.describe(), identity)


def _record_engine(pytestconfig: pytest.Config, config: EngineConfig, engine: Engine, *,
                   pooled: bool) -> None:
    """Note ``engine`` for the test now running (or being set up), once per engine and test.

    A pooled engine's record (``versions()`` and identity are HTTP calls) is taken once per
    configuration, not once per test.
    """
    item = pytestconfig.stash.get(CURRENT_ITEM_KEY, None)
    if item is None:
        return
    if pooled:
        records = pytestconfig.stash.setdefault(ENGINE_RECORDS_KEY, {})
        if config not in records:
            records[config] = engine_record(engine, config)
        record = records[config]
    else:
        record = engine_record(engine, config)
    used = item.stash.setdefault(ITEM_ENGINES_KEY, [])
    if all(seen is not engine for seen, _ in used):
        used.append((engine, record))


def _pooled_engine(pool: EnginePool, config: EngineConfig, tmp_path_factory: pytest.TempPathFactory,
                   nodeid: str) -> Engine:
    """The session's engine for ``config``, booted on first use (a failed boot names ``nodeid``)."""
    from pytest_specgate.engines.config import engine_workdir

    base = tmp_path_factory.getbasetemp() / "specgate-engines"
    return pool.get(config, engine_workdir(base, config), requested_by=nodeid)


@pytest.fixture
def engine(request: pytest.FixtureRequest, engine_config: EngineConfig, specgate_engine_pool: EnginePool,
           tmp_path_factory: pytest.TempPathFactory) -> Engine:
    """A booted engine (mock, mlx, vllm or endpoint), shared by tests with equal configuration."""
    return _pooled_engine(specgate_engine_pool, engine_config, tmp_path_factory, request.node.nodeid)


@pytest.fixture
def shared_engine(request: pytest.FixtureRequest, engine_config: EngineConfig,
                  specgate_engine_pool: EnginePool,
                  tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Engine]:
    """``shared_engine(**changes)``: an engine like ``engine`` with some changes, pooled.

    For specs that only send requests and read telemetry deltas; a spec that swaps,
    rolls, injects faults or times an engine should ``boot_engine`` its own.
    """
    routes = request.config.stash[SETTINGS_KEY].endpoint_routes

    def pooled(**changes: object) -> Engine:
        config = _served_config(engine_config, changes, routes, "shared_engine")
        return _pooled_engine(specgate_engine_pool, config, tmp_path_factory, request.node.nodeid)

    return pooled


def _served_config(base: EngineConfig, changes: dict[str, object],
                   routes: tuple[EndpointRoute, ...], fixture: str) -> EngineConfig:
    """``base`` with ``changes``, on the server that runs it (the endpoint backend cannot reconfigure)."""
    from pytest_specgate.engines.endpoint_routes import EndpointUnserved, route_endpoint

    call = f"{fixture}({', '.join(f'{key}={value!r}' for key, value in changes.items())})"
    try:
        return route_endpoint(base, base.changed(**changes), routes, call)
    except EndpointUnserved as exc:
        refusal = str(exc)
    pytest.fail(refusal, pytrace=False)


@pytest.fixture
def boot_engine(pytestconfig: pytest.Config, engine_config: EngineConfig,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Engine]]:
    """``boot_engine(**changes)``: a new, unshared engine like ``engine``, closed after the test.

    For a baseline next to the speculative engine (``boot_engine(draft=None)``),
    an engine a spec may break, or one that must not boot before a budget is priced.
    """
    from pytest_specgate.engines.config import fresh_engines
    from pytest_specgate.measure.progress import progress_ticker

    routes = pytestconfig.stash[SETTINGS_KEY].endpoint_routes
    with fresh_engines(tmp_path_factory.mktemp, watch_boot=progress_ticker,
                       ledger=memory_ledger(pytestconfig)) as boot:

        def boot_and_record(**changes: object) -> Engine:
            config = _served_config(engine_config, changes, routes, "boot_engine")
            booted = boot(config)
            _record_engine(pytestconfig, config, booted, pooled=False)
            return booted

        yield boot_and_record


@pytest.fixture
def qualification(request: pytest.FixtureRequest, tmp_path: Path,
                  evidence: EvidenceRecorder) -> Iterator[QualificationFactory]:
    """Ordered-gate qualification sessions whose receipt always names the running gate."""
    from pytest_specgate.qualification import qualification_factory

    collector = request.config.stash.get(COLLECTOR_KEY, None)
    with qualification_factory(
        nodeid=request.node.nodeid,
        tmp_path=tmp_path,
        evidence_dir=collector.evidence_dir if collector is not None else None,
        run_id=collector.run_id if collector is not None else None,
        redactor=session_redactor(request.config),
        rootdir=request.config.rootpath,
        recorder=evidence,
    ) as factory:
        yield factory


