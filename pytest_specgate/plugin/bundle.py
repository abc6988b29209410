"""Evidence bundle of the run: the collector created at configure (controller only), the
session's redactor, the signature at session end, and what an xdist worker ships back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import ENTRY_POINT_GROUP
from pytest_specgate.plugin.hookspecs import SpecgateHookSpecs
from pytest_specgate.plugin.host_facts import session_host_facts, session_host_provenance
from pytest_specgate.plugin.stash import (
    COLLECTOR_KEY,
    IMPORT_MARK_KEY,
    PROJECT_KEY,
    REDACTOR_KEY,
    RUN_COLLECTION_KEY,
    SETTINGS_KEY,
    SIGNED_KEY,
    SIGNING_KEY,
)

if TYPE_CHECKING:
    from pytest_specgate.evidence import EvidenceCollector, Redactor, SigningKey
    from pytest_specgate.selection.settings import SpecgateSettings

__all__ = ["evidence_collector", "session_redactor", "signing_key"]


def signing_key(path: Path) -> SigningKey:
    """Read (and check) the key before any test runs, not after a long qualification run."""
    from pytest_specgate.evidence import SigningError, load_signing_key

    try:
        return load_signing_key(path, os.environ)
    except SigningError as exc:
        raise SpecgateInputError(f"--specgate-sign-key: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Where this run's share of what the import watcher saw starts."""
    from pytest_specgate.evidence import watch_imports

    config.stash[IMPORT_MARK_KEY] = watch_imports().mark(xdist_worker=hasattr(config, "workerinput"))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Sign the bundle the evidence collector has just written (controller only); on an xdist
    worker, ship the project files it imported for source binding."""
    config = session.config
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None and config.stash[SETTINGS_KEY].evidence_dir is not None:
        from pytest_specgate.evidence import (
            FOREIGN_MODULES_KEY,
            IMPORTED_FILES_KEY,
            foreign_modules,
            git_top,
            imported_source_files,
            interpreter_locations,
        )

        modules = _imported_modules(config, worker=True)
        imported = imported_source_files(modules, [item.path for item in session.items], config.rootpath)
        workeroutput[IMPORTED_FILES_KEY] = sorted(str(path) for path in imported)
        locations = interpreter_locations(git_top(config.rootpath.resolve()))
        workeroutput[FOREIGN_MODULES_KEY] = foreign_modules(modules, locations)
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


def evidence_collector(config: pytest.Config, settings: SpecgateSettings,
                       evidence_dir: Path) -> EvidenceCollector:
    """The bundle writer of this run: created on the controller only, never on xdist workers."""
    from pytest_specgate.evidence import EvidenceCollector
    from pytest_specgate.plugin.census import take_census

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
        run_provenance=lambda modules: _run_provenance(config, modules),
        run_modules=lambda: _imported_modules(config, worker=False),
        job_nonce=settings.job_nonce,
    )


def _run_provenance(config: pytest.Config, modules: Mapping[str, object]) -> dict[str, Any]:
    """What shaped this run, which imported ``modules``, from outside the repository
    (``evidence._run_provenance``)."""
    from importlib import metadata

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
        modules=modules,
        sys_path=sys.path,
        redact=collector.redactor.text,
    )


def _imported_modules(config: pytest.Config, *, worker: bool) -> dict[str, object]:
    from pytest_specgate.evidence import option_plugin_names, run_modules, watch_imports

    mark = config.stash.get(IMPORT_MARK_KEY, None)
    watched, files = watch_imports().since(mark) if mark is not None else ([], [])
    return run_modules(sys.modules, watched, files, config.pluginmanager.get_plugins(),
                       option_plugin_names([*config.getini("addopts"), *config.invocation_params.args],
                                           os.environ),
                       worker=worker or (mark is not None and mark.xdist_process))


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
