"""Which engine a test gets: its ``@pytest.mark.engine`` over the command line, and the pool that boots it.

The rule (docs/engines.md, "Which backend runs"): a marker that names a backend pins the
test to it, because its options are that backend's; ``--specgate-engine`` (or the
``specgate_engine`` ini key, or ``--specgate-endpoint``, which implies the endpoint
backend) chooses for every test whose marker names none; else the mock. A pinned test
the command line asked to move is never silent: :class:`EngineChoice` says so, the plugin
warns, and the evidence records which backend ran and why (``selected_by``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol, final

from pytest_specgate.contracts.engine import EngineBootError
from pytest_specgate.contracts.engine_config import (
    BY_ENDPOINT,
    BY_OPTION,
    NAMED_FIELDS,
    EngineConfig,
    RunEngineOptions,
    freeze_option,
)
from pytest_specgate.contracts.engine_options import check_engine_options
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import DEFAULT_BACKEND
from pytest_specgate.contracts.validation import is_count
from pytest_specgate.engines.backends import BootFunction, backend_named, boot_function

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.engines.hygiene import MemoryLedger

__all__ = [
    "EngineChoice",
    "EnginePool",
    "check_run_engines",
    "close_in_reverse",
    "engine_choice_for_node",
    "engine_choice_from",
    "engine_config_from",
    "engine_workdir",
    "fresh_engines",
]

BY_MARKER: Final = "marker"
BY_DEFAULT: Final = "default"


@final
@dataclass(frozen=True)
class EngineChoice:
    """The engine a test gets and why: ``selected_by`` is ``marker``, ``--specgate-engine``,
    ``--specgate-endpoint`` or ``default``; ``overridden`` is the option that asked for another
    backend when the marker pinned this one (``--specgate-engine=vllm``)."""

    config: EngineConfig
    selected_by: str
    overridden: str | None = None

    def reason(self) -> str:
        """One line for the evidence: which backend ran and why."""
        if self.overridden is not None:
            return (f"{BY_MARKER}: @pytest.mark.engine names {self.config.backend}, which wins over "
                    f"{self.overridden}")
        return {
            BY_MARKER: f"{BY_MARKER}: @pytest.mark.engine names {self.config.backend}",
            BY_OPTION: f"{BY_OPTION}={self.config.backend}",
            BY_ENDPOINT: f"{BY_ENDPOINT}: implies the endpoint backend",
        }.get(self.selected_by, f"{BY_DEFAULT}: no marker or option names a backend; {DEFAULT_BACKEND}")

    def conflict(self) -> str | None:
        """The warning a run shows when the marker kept this test off the asked-for backend."""
        if self.overridden is None:
            return None
        return (f"@pytest.mark.engine names {self.config.backend!r}, so this test runs on "
                f"{self.config.backend}, not on {self.overridden} (a marker that names "
                "a backend pins it; drop the backend from the marker to let the command line choose)")


def _optional_str(where: str, name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise SpecgateInputError(f"{where}: {name} must be a string, got {value!r}", where=f"{where}: {name}",
                             expected="a string", found=repr(value))


def _optional_gamma(where: str, value: object) -> int | None:
    if value is None:
        return None
    if not is_count(value):
        raise SpecgateInputError(
            f"{where}: num_draft_tokens must be a positive integer, got {value!r}",
            where=f"{where}: num_draft_tokens", expected="a positive integer", found=repr(value))
    return value


def _marked_backend(marker_args: Sequence[object], marker_kwargs: Mapping[str, object],
                    where: str) -> object:
    if len(marker_args) > 1:
        raise SpecgateInputError(
            f"{where}: engine() takes at most one positional argument (the backend), "
            f"got {list(marker_args)!r}", where=where, expected="at most one positional argument",
            found=repr(list(marker_args)))
    if marker_args and "backend" in marker_kwargs:
        raise SpecgateInputError(f"{where}: backend given both positionally and as backend=", where=where,
                                 expected="one backend", found="two")
    return marker_args[0] if marker_args else marker_kwargs.get("backend")


def engine_choice_from(
    marker_kwargs: Mapping[str, object],
    run: RunEngineOptions,
    marker_args: Sequence[object] = (),
    *,
    where: str = "engine marker",
    options_where: str = "--specgate-engine-option",
) -> EngineChoice:
    """Resolve a test's engine from ``@pytest.mark.engine(...)`` and the run's options.

    ``marker_args`` may hold one positional backend name. Every option, the marker's and
    ``--specgate-engine-option``'s, is checked against what the backend declares.
    ``where`` names the test and the marker in error messages, ``options_where`` the test
    and the command-line option.
    """
    marked = _marked_backend(marker_args, marker_kwargs, where)
    endpoint_url = _optional_str(where, "--specgate-endpoint", run.endpoint)
    asked = run.backend
    if marked:
        backend = backend_named(marked, where)
        selected_by = BY_MARKER
        moved = asked is not None and asked != backend.name
        overridden = (f"{BY_OPTION}={asked}" if run.engine else BY_ENDPOINT) if moved else None
    elif asked:
        backend, selected_by, overridden = backend_named(asked, where), run.source(), None
    else:
        backend, selected_by, overridden = backend_named(DEFAULT_BACKEND, where), BY_DEFAULT, None
    declared = backend.definition().options
    options = {key: freeze_option(value) for key, value in marker_kwargs.items() if key not in NAMED_FIELDS}
    check_engine_options(options, declared, backend=backend.name, where=where)
    check_engine_options(dict(run.options), declared, backend=backend.name, where=options_where)
    if backend.name == "endpoint" and "url" not in options:
        if endpoint_url is None:
            raise SpecgateInputError(
                f"{where}: the endpoint backend needs a URL: pass --specgate-endpoint URL "
                'or engine("endpoint", url=...)', where=where, expected="a URL", found="none")
        options["url"] = endpoint_url
    config = EngineConfig(
        backend=backend.name,
        target=_optional_str(where, "target", marker_kwargs.get("target")),
        draft=_optional_str(where, "draft", marker_kwargs.get("draft")),
        num_draft_tokens=_optional_gamma(where, marker_kwargs.get("num_draft_tokens")),
        options=tuple(sorted(options.items())),
    )
    return EngineChoice(config, selected_by, overridden)


def engine_config_from(
    marker_kwargs: Mapping[str, object],
    run: RunEngineOptions,
    marker_args: Sequence[object] = (),
    *,
    where: str = "engine marker",
) -> EngineConfig:
    """:func:`engine_choice_from`'s configuration alone."""
    return engine_choice_from(marker_kwargs, run, marker_args, where=where).config


class _Mark(Protocol):
    @property
    def args(self) -> tuple[object, ...]: ...

    @property
    def kwargs(self) -> Mapping[str, object]: ...


class _MarkedNode(Protocol):
    """What of a pytest item the resolution reads (engines do not import pytest)."""

    @property
    def nodeid(self) -> str: ...

    def get_closest_marker(self, name: str) -> _Mark | None: ...


def engine_choice_for_node(node: _MarkedNode, run: RunEngineOptions) -> EngineChoice:
    """The engine for a test: its closest ``engine`` marker over the run's options; every
    error message starts with the test id and the marker or option at fault."""
    marker = node.get_closest_marker("engine")
    args, kwargs = (marker.args, marker.kwargs) if marker is not None else ((), {})
    return engine_choice_from(kwargs, run, args, where=f"{node.nodeid}: @pytest.mark.engine",
                              options_where=f"{node.nodeid}: --specgate-engine-option")


def engine_workdir(base: Path, config: EngineConfig) -> Path:
    """A stable per-configuration directory under ``base`` for an engine's logs and files."""
    import hashlib

    digest = hashlib.sha256(repr(config).encode()).hexdigest()[:10]
    return base / f"{config.backend}-{digest}"


class EnginePool:
    """Boots each distinct EngineConfig once and hands the same engine to every test.

    A configuration that failed to boot is remembered: later requests for it fail
    at once with the first failure's message instead of booting (and timing out)
    again for every test. ``close_all`` belongs in a ``finally`` (session fixture
    teardown) and closes every engine even if one of them fails to close.
    """

    def __init__(self, boot: BootFunction | None = None,
                 on_handout: Callable[[EngineConfig, Engine], None] | None = None,
                 watch_boot: BootWatch | None = None,
                 ledger: MemoryLedger | None = None) -> None:
        """``on_handout`` sees every engine ``get`` returns, however the caller reached the pool;
        ``watch_boot`` wraps each boot (the plugin shows progress while a slow one runs);
        ``ledger`` reads free memory before each boot and after each close."""
        self._boot = boot
        self._watch_boot = watch_boot
        self._ledger = ledger
        self._on_handout = on_handout
        self._engines: dict[EngineConfig, Engine] = {}
        self._failures: dict[EngineConfig, str] = {}

    def get(self, config: EngineConfig, workdir: Path, *, requested_by: str | None = None) -> Engine:
        """The engine for ``config``; ``requested_by`` (a test id) is named if its boot fails."""
        engine = self._engines.get(config)
        if engine is None:
            engine = self._boot_once(config, workdir, requested_by)
        if self._on_handout is not None:
            self._on_handout(config, engine)
        return engine

    def _boot_once(self, config: EngineConfig, workdir: Path, requested_by: str | None) -> Engine:
        failure = self._failures.get(config)
        if failure is not None:
            raise EngineBootError(failure)
        boot = self._boot or boot_function(config.backend)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            with _watched(self._watch_boot, config):
                engine = _boot_watched(boot, config, workdir, self._ledger)
        except Exception as exc:  # whatever a backend's boot raises is remembered, then re-raised
            self._failures[config] = _remembered_failure(config, exc, requested_by)
            raise
        self._engines[config] = engine
        return engine

    def __len__(self) -> int:
        return len(self._engines)

    def __contains__(self, config: object) -> bool:
        return config in self._engines

    def close_all(self) -> None:
        engines = list(self._engines.values())
        self._engines.clear()
        close_in_reverse(engines, "closing engines failed", self._ledger)


def _remembered_failure(config: EngineConfig, exc: Exception, requested_by: str | None) -> str:
    """The one line every later request for a configuration that failed to boot gets."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    by = f" for {requested_by}" if requested_by else ""
    return (
        f"{config.backend} engine ({config.describe()}) failed to boot earlier in this session{by} "
        f"and is not booted again: {type(exc).__name__}: {first}"
    )


def _boot_watched(boot: BootFunction, config: EngineConfig, workdir: Path,
                  ledger: MemoryLedger | None) -> Engine:
    """``boot(config, workdir)``, with free memory read just before it when there is a ledger."""
    if ledger is None:
        return boot(config, workdir)
    before = ledger.before_boot()
    engine = boot(config, workdir)
    ledger.booted(engine, before)
    return engine


def close_in_reverse(engines: Sequence[Engine], failure: str, ledger: MemoryLedger | None = None) -> None:
    """Close the last-booted engine first; every one is closed even if some fail.

    The failures are raised together as an ExceptionGroup titled ``failure``. With a ``ledger``,
    free memory is read after each close (after a failed one too: what it kept is the question).
    """
    errors: list[Exception] = []
    for engine in reversed(engines):
        try:
            engine.close()
        except Exception as exc:  # one engine's failing close must not leave the others running
            errors.append(exc)
        if ledger is not None:
            ledger.closed(engine)
    if errors:
        raise ExceptionGroup(failure, errors)


BootWatch = Callable[[str], AbstractContextManager[object]]
"""``watch(label)``: a context manager around one engine boot."""


def _watched(watch: BootWatch | None, config: EngineConfig) -> AbstractContextManager[object]:
    if watch is None:
        return nullcontext()
    return watch(f"engine boot ({dataclasses.replace(config, options=()).describe()})")


@contextmanager
def fresh_engines(workdir_for: Callable[[str], Path], *, watch_boot: BootWatch | None = None,
                  ledger: MemoryLedger | None = None) -> Iterator[Callable[[EngineConfig], Engine]]:
    """``boot(config)`` boots a new, unshared engine; all are closed at exit.

    For specs that need a second engine (a baseline next to the speculative one),
    one they may break, or one that must not boot before a budget is priced.
    """
    booted: list[Engine] = []

    def boot(config: EngineConfig) -> Engine:
        with _watched(watch_boot, config):
            engine = _boot_watched(boot_function(config.backend), config, workdir_for(config.backend), ledger)
        booted.append(engine)
        return engine

    try:
        yield boot
    finally:
        close_in_reverse(booted, "closing engines booted by boot_engine failed", ledger)


def check_run_engines(run: RunEngineOptions) -> None:
    """The run's ``--specgate-engine`` names a backend and its ``--specgate-engine-option``
    pairs are that backend's (checked once at configure; tests pinned to another backend
    are checked again at collection)."""
    backend = backend_named(run.backend or DEFAULT_BACKEND, BY_OPTION)
    check_engine_options(dict(run.options), backend.definition().options, backend=backend.name,
                         where="--specgate-engine-option")
