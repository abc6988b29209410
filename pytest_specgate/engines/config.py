"""Engine configuration: one hashable value per distinct engine, resolved marker > option > default.

Being hashable is what lets :class:`EnginePool` boot each distinct configuration
once per session (once per xdist worker) and share it between tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, overload

from pytest_specgate.contracts.engine import EngineBootError
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import DEFAULT_BACKEND
from pytest_specgate.contracts.validation import is_count, is_finite_positive, is_whole
from pytest_specgate.selection.backends import BootFunction, backend_named, boot_function, freeze_option

if TYPE_CHECKING:
    import pytest

    from pytest_specgate.contracts.engine import Engine

__all__ = [
    "EngineConfig",
    "EnginePool",
    "close_in_reverse",
    "engine_config_for_node",
    "engine_config_from",
    "engine_workdir",
    "fresh_engines",
]

_NAMED_FIELDS = ("backend", "target", "draft", "num_draft_tokens")


@dataclass(frozen=True)
class EngineConfig:
    """Everything that distinguishes one engine instance from another."""

    backend: str
    target: str | None = None
    draft: str | None = None
    num_draft_tokens: int | None = None
    options: tuple[tuple[str, object], ...] = ()

    def option(self, name: str, default: object = None) -> object:
        """A backend-specific option, or ``default`` when it was not given."""
        for key, value in self.options:
            if key == name:
                return value
        return default

    def positive_number_option(self, name: str, default: float) -> float:
        """A positive number option (seconds, bytes, a fraction); anything else is a usage error."""
        value = self.option(name, default)
        if not is_finite_positive(value):
            raise SpecgateInputError(
                f"{self.backend} engine ({self.describe()}): option {name} must be a positive number, "
                f"got {value!r}"
            )
        assert isinstance(value, int | float)
        return float(value)

    @overload
    def int_option(self, name: str, default: int, *, minimum: int | None = None) -> int: ...

    @overload
    def int_option(self, name: str, default: None, *, minimum: int | None = None) -> int | None: ...

    def int_option(self, name: str, default: int | None, *, minimum: int | None = None) -> int | None:
        """An integer option of at least ``minimum`` (None when absent and ``default`` is None)."""
        value = self.option(name, default)
        if value is None:
            return None
        if not is_whole(value) or (minimum is not None and value < minimum):
            wanted = {None: "an integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
            raise SpecgateInputError(
                f"{self.backend} engine ({self.describe()}): option {name} must be {wanted}, got {value!r}"
            )
        return value

    def with_options(self, **changes: object) -> EngineConfig:
        """A copy with some options added or replaced (options stay sorted)."""
        merged = dict(self.options)
        merged.update({key: freeze_option(value) for key, value in changes.items()})
        return EngineConfig(
            backend=self.backend,
            target=self.target,
            draft=self.draft,
            num_draft_tokens=self.num_draft_tokens,
            options=tuple(sorted(merged.items())),
        )

    def changed(self, **changes: object) -> EngineConfig:
        """A copy with named fields replaced (``draft=None`` turns speculation off) and the
        other keywords set as backend options."""
        named = {key: value for key, value in changes.items() if key in _NAMED_FIELDS}
        options = {key: value for key, value in changes.items() if key not in _NAMED_FIELDS}
        return dataclasses.replace(self, **named).with_options(**options)  # type: ignore[arg-type]

    def describe(self) -> str:
        """Short human-readable label, e.g. for logs and evidence."""
        parts = [self.backend]
        if self.target:
            parts.append(f"target={self.target}")
        if self.draft:
            parts.append(f"draft={self.draft}")
        if self.num_draft_tokens is not None:
            parts.append(f"gamma={self.num_draft_tokens}")
        parts.extend(f"{key}={value!r}" for key, value in self.options)
        return " ".join(parts)


def _optional_str(where: str, name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise SpecgateInputError(f"{where}: {name} must be a string, got {value!r}")


def _optional_gamma(where: str, value: object) -> int | None:
    if value is None:
        return None
    if not is_count(value):
        raise SpecgateInputError(f"{where}: num_draft_tokens must be a positive integer, got {value!r}")
    return value


def engine_config_from(
    marker_kwargs: Mapping[str, object],
    option_values: Mapping[str, object],
    marker_args: Sequence[object] = (),
    *,
    where: str = "engine marker",
) -> EngineConfig:
    """Resolve an EngineConfig from ``@pytest.mark.engine(...)`` and command-line options.

    ``marker_args`` may hold one positional backend name. ``option_values`` uses the
    keys ``engine`` (``--specgate-engine``) and ``endpoint`` (``--specgate-endpoint``).
    A backend in the marker wins over the option, which wins over ``"mock"``; an
    endpoint URL given without ``--specgate-engine`` selects the endpoint backend.
    ``where`` names the test in error messages.
    """
    if len(marker_args) > 1:
        raise SpecgateInputError(
            f"{where}: engine() takes at most one positional argument (the backend), "
            f"got {list(marker_args)!r}"
        )
    if marker_args and "backend" in marker_kwargs:
        raise SpecgateInputError(f"{where}: backend given both positionally and as backend=")
    endpoint_url = _optional_str(where, "--specgate-endpoint", option_values.get("endpoint"))
    option_backend = option_values.get("engine") or ("endpoint" if endpoint_url else None)
    chosen = (
        (marker_args[0] if marker_args else marker_kwargs.get("backend")) or option_backend or DEFAULT_BACKEND
    )
    resolved = backend_named(chosen, where)
    backend = resolved.name
    options = {key: freeze_option(value) for key, value in marker_kwargs.items() if key not in _NAMED_FIELDS}
    unknown = resolved.unknown_options(options)
    if unknown:
        raise SpecgateInputError(
            f"{where}: unknown option(s) {', '.join(unknown)} for the {backend} backend; "
            f"it takes {', '.join(sorted(resolved.options or ()))}"
        )
    if backend == "endpoint" and "url" not in options:
        if endpoint_url is None:
            raise SpecgateInputError(
                f"{where}: the endpoint backend needs a URL: pass --specgate-endpoint URL "
                'or engine("endpoint", url=...)'
            )
        options["url"] = endpoint_url
    return EngineConfig(
        backend=backend,
        target=_optional_str(where, "target", marker_kwargs.get("target")),
        draft=_optional_str(where, "draft", marker_kwargs.get("draft")),
        num_draft_tokens=_optional_gamma(where, marker_kwargs.get("num_draft_tokens")),
        options=tuple(sorted(options.items())),
    )


def engine_config_for_node(
    node: pytest.Item, option_values: Mapping[str, object], *, where: str | None = None
) -> EngineConfig:
    """The EngineConfig for a test: its closest ``engine`` marker over the command-line options.

    ``where`` (default: the test id) starts every error message.
    """
    label = node.nodeid if where is None else where
    marker = node.get_closest_marker("engine")
    if marker is None:
        return engine_config_from({}, option_values, where=label)
    return engine_config_from(marker.kwargs, option_values, marker.args, where=label)


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
                 on_handout: Callable[[EngineConfig, Engine], None] | None = None) -> None:
        """``on_handout`` sees every engine ``get`` returns, however the caller reached the pool."""
        self._boot = boot
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
            engine = boot(config, workdir)
        except Exception as exc:
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
        close_in_reverse(engines, "closing engines failed")


def _remembered_failure(config: EngineConfig, exc: Exception, requested_by: str | None) -> str:
    """The one line every later request for a configuration that failed to boot gets."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    by = f" for {requested_by}" if requested_by else ""
    return (
        f"{config.backend} engine ({config.describe()}) failed to boot earlier in this session{by} "
        f"and is not booted again: {type(exc).__name__}: {first}"
    )


def close_in_reverse(engines: Sequence[Engine], failure: str) -> None:
    """Close the last-booted engine first; every one is closed even if some fail.

    The failures are raised together as an ExceptionGroup titled ``failure``.
    """
    errors: list[Exception] = []
    for engine in reversed(engines):
        try:
            engine.close()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise ExceptionGroup(failure, errors)


@contextmanager
def fresh_engines(workdir_for: Callable[[str], Path]) -> Iterator[Callable[[EngineConfig], Engine]]:
    """``boot(config)`` boots a new, unshared engine; all are closed at exit.

    For specs that need a second engine (a baseline next to the speculative one),
    one they may break, or one that must not boot before a budget is priced.
    """
    booted: list[Engine] = []

    def boot(config: EngineConfig) -> Engine:
        engine = boot_function(config.backend)(config, workdir_for(config.backend))
        booted.append(engine)
        return engine

    try:
        yield boot
    finally:
        close_in_reverse(booted, "closing engines booted by boot_engine failed")
