"""Session settings: resolved once, option > ini > default, and validated.

pytest converts the typed options (``addoption(type=...)``, converters in
``option_values``) and holds the defaults (``addoption``/``addini``); what is read by hand
here is what pytest cannot do: an ini number (no float ini type before pytest 8.4), checks
across options, a value given with a space that pytest read as a test path, and endpoint
routes (objects xdist could not ship to its workers as option values). Each option's help
text is one constant in ``contracts.markers`` shared by ``addoption`` and ``addini`` (the
pytest-timeout convention).
"""

from __future__ import annotations

import itertools
from argparse import ArgumentTypeError
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, final

from pytest_specgate.contracts.census import spec_paths_from
from pytest_specgate.contracts.engine_config import RunEngineOptions
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.gates import GateName, declared_gates
from pytest_specgate.contracts.hardware import HostProfile
from pytest_specgate.contracts.project_keys import check_known_keys, enrolled_backends
from pytest_specgate.contracts.runmode import REQUIRE_ALL, RunSettings
from pytest_specgate.contracts.thresholds import DEFAULT_CONFIDENCE_LEVEL
from pytest_specgate.contracts.validation import JOB_NONCE, compiled_patterns
from pytest_specgate.selection.hardware import host_profiles_from_table, specgate_table
from pytest_specgate.selection.option_values import confidence_level, duration_scale

if TYPE_CHECKING:
    import pytest

    from pytest_specgate.selection.endpoint_routes import EndpointRoute

__all__ = [
    "ProjectSettings",
    "SpecgateSettings",
    "load_project_settings",
    "parse_endpoint_routes",
    "resolve_settings",
]


@final
@dataclass(frozen=True)
class SpecgateSettings:
    run: RunSettings
    host_facts_file: Path | None
    evidence_dir: Path | None
    allow_dirty: bool
    engine: str | None
    endpoint: str | None
    duration_scale: float
    vllm_python: str | None
    engine_options: tuple[tuple[str, object], ...] = ()
    sign_key: Path | None = None
    endpoint_routes: tuple[EndpointRoute, ...] = ()
    record_reference_dir: Path | None = None
    confidence_level: float = DEFAULT_CONFIDENCE_LEVEL
    job_nonce: str | None = None
    """``--specgate-nonce``: the per-job value a fleet runner passes, written into the bundle's
    statement so that ``specgate sign --nonce`` signs only the bundle this job made."""

    @property
    def engines(self) -> RunEngineOptions:
        """What the run asks of every engine; the backend name is checked where backends are
        known (``engines.backends``, at configure)."""
        return RunEngineOptions(self.engine, self.endpoint, self.engine_options)

    @property
    def wants_payload(self) -> bool:
        """Whether anyone reads the per-test payload: the evidence writer (on the controller,
        fed by xdist workers) or the diagnostic summary."""
        return self.evidence_dir is not None or self.run.diagnostic


@final
@dataclass(frozen=True)
class ProjectSettings:
    """What a project declares under ``[tool.specgate]`` in its pyproject.toml, read once."""

    profiles: Mapping[str, HostProfile]
    redact_patterns: tuple[str, ...]
    gates: tuple[GateName, ...] = ()
    declared_in: str = "pyproject.toml"
    spec_paths: tuple[str, ...] | None = None
    """``[tool.specgate] spec_paths``: where the census looks for AC tests (None: pytest's
    ``testpaths``)."""
    fixtures_dir: Path | None = None
    """``[tool.specgate] fixtures_dir`` resolved against the pyproject's directory (None: the
    rootdir's ``fixtures/``)."""


def load_project_settings(pyproject: Path | None) -> ProjectSettings:
    """Host profiles, redaction patterns and merge gates; a bad table or an unknown key is an
    input error naming it (and the key meant, when one is close)."""
    if pyproject is None:
        return ProjectSettings(profiles={}, redact_patterns=())
    table = specgate_table(pyproject)
    check_known_keys(table, where=str(pyproject))
    profiles = host_profiles_from_table(table.get("hosts", {}), pyproject)
    redact = table.get("redact", {})
    patterns = redact.get("patterns", []) if isinstance(redact, dict) else None
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise SpecgateInputError(
            f"{pyproject}: [tool.specgate.redact] patterns must be a list of strings, got {patterns!r}"
        )
    compiled_patterns(patterns, f"{pyproject}: [tool.specgate.redact]")
    gates = declared_gates(table["gates"], str(pyproject)) if "gates" in table else ()
    spec_paths = spec_paths_from(table, (), str(pyproject)) if "spec_paths" in table else None
    enrolled_backends(table.get("backends", {}), str(pyproject))
    return ProjectSettings(profiles=profiles, redact_patterns=tuple(patterns), gates=gates,
                           declared_in=str(pyproject), spec_paths=spec_paths,
                           fixtures_dir=_fixtures_dir(table, pyproject))


def _fixtures_dir(table: Mapping[str, object], pyproject: Path) -> Path | None:
    if "fixtures_dir" not in table:
        return None
    value = table["fixtures_dir"]
    if not isinstance(value, str) or not value.strip():
        raise SpecgateInputError.mismatch(f"{pyproject}: [tool.specgate] fixtures_dir",
                                          "a directory path (relative to pyproject.toml)", value)
    return (pyproject.parent / value).resolve()


def _ini_or(config: pytest.Config, name: str) -> str | None:
    value = config.getini(name)
    return str(value) if value not in (None, "", []) else None


def _number_option(config: pytest.Config, name: str, convert: Callable[[str], float]) -> float:
    """The option as pytest converted it, else the ini value (or the ini default) converted alike."""
    number = config.getoption(name)
    if number is not None:
        return float(number)
    try:
        return convert(str(config.getini(name)))
    except ArgumentTypeError as exc:
        raise SpecgateInputError(f"{name} (ini): {exc}") from None


def spaced_outside_values(args: Sequence[str], invocation_dir: Path) -> list[tuple[str, str]]:
    """``(option, value)`` pairs given as ``--specgate-x VALUE`` where VALUE is an existing path
    outside ``invocation_dir``.

    pytest picks the rootdir (and so the pyproject and its host profiles) before plugins
    register their options, so such a VALUE is read as a test path and can move the rootdir
    to another project without a word; ``--specgate-x=VALUE`` cannot.
    """
    found = []
    for option, value in itertools.pairwise(args):
        if not option.startswith("--specgate-") or "=" in option or value.startswith("-"):
            continue
        path = (invocation_dir / value).resolve()
        if path.exists() and not path.is_relative_to(invocation_dir.resolve()):
            found.append((option, value))
    return found


def resolve_settings(config: pytest.Config) -> SpecgateSettings:
    """Read every specgate option once; bad values are an input error naming the option."""
    spaced = spaced_outside_values(config.invocation_params.args, config.invocation_params.dir)
    if spaced:
        option, value = spaced[0]
        raise SpecgateInputError(
            f"{option} {value}: give the value with '=' ({option}={value}): with a space pytest also "
            f"reads {value} as a test path when it picks the rootdir, and this run took its settings "
            f"from {config.rootpath}"
        )
    raw_required: list[str] = config.getoption("specgate_require") or []
    required = frozenset(value.strip() for value in raw_required if value.strip())
    if REQUIRE_ALL in required and len(required) > 1:
        raise SpecgateInputError(
            f"--specgate-require: 'all' already requires every spec; also got "
            f"{', '.join(sorted(required - {REQUIRE_ALL}))}"
        )
    diagnostic = bool(config.getoption("specgate_diagnostic"))
    endpoint = config.getoption("specgate_endpoint") or _ini_or(config, "specgate_endpoint")
    engine = config.getoption("specgate_engine") or _ini_or(config, "specgate_engine")
    if engine == "endpoint" and not endpoint:
        raise SpecgateInputError("--specgate-engine endpoint needs --specgate-endpoint URL")
    scale = _number_option(config, "specgate_duration_scale", duration_scale)
    level = _number_option(config, "specgate_confidence_level", confidence_level)
    facts = config.getoption("specgate_host_facts")
    evidence = config.getoption("specgate_evidence") or _ini_or(config, "specgate_evidence")
    sign_key = config.getoption("specgate_sign_key")
    if sign_key and not evidence:
        raise SpecgateInputError(
            f"--specgate-sign-key={sign_key}: signs the evidence bundle, but no --specgate-evidence "
            "directory was given"
        )
    record = config.getoption("specgate_record_reference")
    nonce = config.getoption("specgate_nonce")
    if nonce is not None and not JOB_NONCE.match(nonce):
        raise SpecgateInputError(
            f"--specgate-nonce={nonce!r}: expected 16 to 128 characters of [A-Za-z0-9_-] "
            "(e.g. openssl rand -hex 16)"
        )
    return SpecgateSettings(
        run=RunSettings(required=required, diagnostic=diagnostic),
        host_facts_file=Path(facts) if facts else None,
        # Absolute, so xdist workers and tests that chdir agree on it.
        evidence_dir=config.invocation_params.dir / evidence if evidence else None,
        allow_dirty=bool(config.getoption("specgate_allow_dirty")),
        engine=engine,
        endpoint=endpoint,
        duration_scale=scale,
        vllm_python=config.getoption("specgate_vllm_python") or _ini_or(config, "specgate_vllm_python"),
        engine_options=tuple(sorted(dict(config.getoption("specgate_engine_option")).items())),
        sign_key=config.invocation_params.dir / sign_key if sign_key else None,
        endpoint_routes=parse_endpoint_routes(config.getoption("specgate_endpoint_for") or []),
        record_reference_dir=(config.invocation_params.dir / record if record else None),
        confidence_level=level,
        job_nonce=nonce,
    )


def parse_endpoint_routes(texts: list[str]) -> tuple[EndpointRoute, ...]:
    """Each ``--specgate-endpoint-for`` value as a route; a bad one is an input error quoting it."""
    if not texts:
        return ()
    from pytest_specgate.selection.endpoint_routes import parse_endpoint_route

    try:
        return tuple(parse_endpoint_route(text) for text in texts)
    except ValueError as exc:
        raise SpecgateInputError(f"--specgate-endpoint-for: {exc}") from None
