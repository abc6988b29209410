"""Configure phase: the plugin's options and ini values, its hook specs, and the settings
resolved once per run (``selection.settings``), which every later hook reads from the stash.

A bad option, marker or file raises ``SpecgateInputError`` wherever it is read;
``input_errors_stop_the_run`` here is the one place it becomes pytest's ``UsageError``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_specgate.contracts import markers as marker_docs
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL
from pytest_specgate.plugin.bundle import evidence_collector, signing_key
from pytest_specgate.plugin.hookspecs import SpecgateHookSpecs
from pytest_specgate.plugin.stash import COLLECTOR_KEY, PROJECT_KEY, SETTINGS_KEY, SIGNING_KEY
from pytest_specgate.plugin.termination import install_sigterm_teardown
from pytest_specgate.selection import option_values

if TYPE_CHECKING:
    from pytest_specgate.selection.settings import SpecgateSettings

__all__ = ["duration_scale_of", "input_errors_stop_the_run"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
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
    # None: the ini value (or its default) applies; settings converts it alike.
    group.addoption("--specgate-duration-scale", dest="specgate_duration_scale", metavar="FACTOR",
                    type=option_values.duration_scale, default=None, help=marker_docs.DURATION_SCALE_HELP)
    group.addoption("--specgate-confidence-level", dest="specgate_confidence_level", metavar="LEVEL",
                    type=option_values.confidence_level, default=None,
                    help=marker_docs.CONFIDENCE_LEVEL_HELP)
    group.addoption(
        "--specgate-engine-option", action="append", dest="specgate_engine_option", metavar="KEY=VALUE",
        type=option_values.engine_option, default=[],
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
        "--specgate-nonce", dest="specgate_nonce", metavar="NONCE", default=None,
        help="A per-job value (16-128 of [A-Za-z0-9_-]) written into the bundle's in-toto statement: "
             "a fleet runner passes one per job and signs only with 'specgate sign --nonce' of the same.",
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
    parser.addini("specgate_duration_scale", marker_docs.DURATION_SCALE_HELP, default="1")
    parser.addini("specgate_confidence_level", marker_docs.CONFIDENCE_LEVEL_HELP,
                  default=str(DEFAULT_CONFIDENCE_LEVEL))


@contextlib.contextmanager
def input_errors_stop_the_run() -> Iterator[None]:
    """The one place a :class:`SpecgateInputError` (bad options, markers, files, host facts)
    becomes the ``pytest.UsageError`` pytest stops on with its one line and exit 4."""
    try:
        yield
    except SpecgateInputError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    from pytest_specgate.contracts.fixtures_dir import FIXTURES_DIR_NAME, use_project_fixtures_dir
    from pytest_specgate.selection.settings import load_project_settings, resolve_settings

    for doc in marker_docs.MARKER_DOCS:
        config.addinivalue_line("markers", doc)
    restore_sigterm = install_sigterm_teardown()
    if restore_sigterm is not None:
        config.add_cleanup(restore_sigterm)
    with input_errors_stop_the_run():
        config.stash[SETTINGS_KEY] = resolve_settings(config)
        config.stash[PROJECT_KEY] = project = load_project_settings(_pyproject(config))
        fixtures = project.fixtures_dir or config.rootpath / FIXTURES_DIR_NAME
        config.add_cleanup(use_project_fixtures_dir(fixtures))
        settings = config.stash[SETTINGS_KEY]
        _check_run_engines(settings)
        if settings.evidence_dir is not None and not hasattr(config, "workerinput"):
            if settings.sign_key is not None:
                config.stash[SIGNING_KEY] = signing_key(settings.sign_key)
            collector = evidence_collector(config, settings, settings.evidence_dir)
            config.stash[COLLECTOR_KEY] = collector
            config.pluginmanager.register(collector, "specgate-evidence")


def _check_run_engines(settings: SpecgateSettings) -> None:
    from pytest_specgate.engines.config import check_run_engines

    check_run_engines(settings.engines)


def _pyproject(config: pytest.Config) -> Path | None:
    if config.inipath is not None and config.inipath.name == "pyproject.toml":
        return config.inipath
    candidate = config.rootpath / "pyproject.toml"
    return candidate if candidate.is_file() else None


def duration_scale_of(config: pytest.Config) -> float:
    """``--specgate-duration-scale``: 1 unless shortened (and then nothing qualifies)."""
    return config.stash[SETTINGS_KEY].duration_scale
