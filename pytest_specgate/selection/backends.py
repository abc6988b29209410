"""The one list of engine backends: the built-ins here, third-party ones from an entry-point group.

Every place that needs backend names (option validation, help text, the engine
marker, boot) reads them from here. A third-party package adds a backend by
declaring, in its own metadata::

    [project.entry-points."pytest_specgate.backends"]
    echo = "specgate_echo:boot"

where ``boot(config: EngineConfig, workdir: Path) -> Engine``. Entry points are
only scanned when a name is not built in, so runs on the built-ins never pay
for the scan; built-in names cannot be replaced by an entry point.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast, final

from pytest_specgate.contracts.engine_options import ENDPOINT_OPTIONS, MLX_OPTIONS, MOCK_OPTIONS, VLLM_OPTIONS
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import DEFAULT_BACKEND, ENTRY_POINT_GROUP

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.engines.config import EngineConfig

__all__ = [
    "BUILTIN_BACKENDS",
    "DEFAULT_BACKEND",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BootFunction",
    "available_backends",
    "backend_named",
    "backends_from_entry_points",
    "boot_function",
    "freeze_option",
]


BootFunction = Callable[["EngineConfig", Path], "Engine"]


@final
@dataclass(frozen=True)
class Backend:
    """A backend: where its boot function lives and which marker options it takes.

    ``options`` None means the backend reads its options at boot and the engine
    marker's keywords are not checked at collection (entry-point backends).
    ``builds_tiny_models``: ``tiny:<role>`` references are built into the
    session's model cache for it.
    """

    name: str
    boot: str
    origin: str
    options: frozenset[str] | None = None
    builds_tiny_models: bool = False

    def unknown_options(self, names: Iterable[str]) -> list[str]:
        """The given option names this backend does not take (none when it does not say)."""
        if self.options is None:
            return []
        return sorted(set(names) - self.options)


_BUILT_IN = "built in"
BUILTIN_BACKENDS: Final[Mapping[str, Backend]] = {
    backend.name: backend
    for backend in (
        Backend("mock", "pytest_specgate.engines.mock:boot", _BUILT_IN, MOCK_OPTIONS),
        Backend("mlx", "pytest_specgate.engines.mlx:boot", _BUILT_IN, MLX_OPTIONS,
                builds_tiny_models=True),
        Backend("vllm", "pytest_specgate.engines.vllm:boot", _BUILT_IN, VLLM_OPTIONS,
                builds_tiny_models=True),
        Backend("endpoint", "pytest_specgate.engines.endpoint:boot", _BUILT_IN, ENDPOINT_OPTIONS),
    )
}


def backends_from_entry_points(entry_points: Iterable[metadata.EntryPoint]) -> dict[str, Backend]:
    """The built-ins plus one backend per entry point; a clash is an input error naming both sides."""
    found: dict[str, Backend] = dict(BUILTIN_BACKENDS)
    for entry in entry_points:
        origin = f"entry point {entry.name} = {entry.value} ({_distribution_of(entry)})"
        clash = found.get(entry.name)
        if clash is not None:
            raise SpecgateInputError(
                f"engine backend {entry.name!r}: {origin} clashes with the {clash.origin} one; "
                f"rename one of them in group {ENTRY_POINT_GROUP}"
            )
        found[entry.name] = Backend(entry.name, entry.value, origin)
    return found


def _distribution_of(entry: metadata.EntryPoint) -> str:
    dist = entry.dist
    return "unknown distribution" if dist is None else f"{dist.name} {dist.version}"


@functools.cache
def available_backends() -> Mapping[str, Backend]:
    """Built-ins and installed entry-point backends (scanned once per process)."""
    return backends_from_entry_points(metadata.entry_points(group=ENTRY_POINT_GROUP))


def backend_named(name: object, where: str) -> Backend:
    """The backend called ``name``; anything else is an input error listing what exists."""
    if isinstance(name, str):
        builtin = BUILTIN_BACKENDS.get(name)
        if builtin is not None:
            return builtin
        installed = available_backends()
        if name in installed:
            return installed[name]
    else:
        installed = BUILTIN_BACKENDS
    raise SpecgateInputError(
        f"{where}: unknown engine backend {name!r}; expected one of {', '.join(sorted(installed))} "
        f"(more register through the entry-point group {ENTRY_POINT_GROUP})"
    )


def boot_function(name: str) -> BootFunction:
    """Import a backend's ``boot`` lazily, so unused backends cost nothing at load."""
    backend = backend_named(name, "engine")
    try:
        loaded: object = metadata.EntryPoint(backend.name, backend.boot, ENTRY_POINT_GROUP).load()
    except (ImportError, AttributeError, ValueError) as exc:
        raise SpecgateInputError(
            f"engine backend {name!r} ({backend.origin}) cannot be loaded: {type(exc).__name__}: {exc}"
        ) from None
    if not callable(loaded):
        raise SpecgateInputError(
            f"engine backend {name!r} ({backend.origin}) names a {type(loaded).__name__}, not a boot function"
        )
    return cast(BootFunction, loaded)


def freeze_option(value: object) -> object:
    """Make an option value hashable: lists/sets become tuples, dicts sorted pairs."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), freeze_option(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze_option(v) for v in value)
    if isinstance(value, set | frozenset):
        return tuple(sorted((freeze_option(v) for v in value), key=repr))
    try:
        hash(value)
    except TypeError as exc:
        raise SpecgateInputError(
            f"engine option value {value!r} is not hashable ({type(value).__name__})"
        ) from exc
    return value


