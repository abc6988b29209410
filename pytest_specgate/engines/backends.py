"""The one list of engine backends: the built-ins here, third-party ones from an entry-point group.

Every place that needs backend names (option validation, help text, the engine marker,
boot) reads them from here. A third-party package adds a backend by declaring, in its
own metadata::

    [project.entry-points."pytest_specgate.backends"]
    echo = "specgate_echo:BACKEND"

where ``BACKEND`` is an :class:`~pytest_specgate.contracts.engine_backend.EngineBackend`
(a boot function and its marker options; docs/backends.md). Entry points are only scanned
when a name is not built in, so runs on the built-ins never pay for the scan; built-in
names cannot be replaced by an entry point. A built-in's engine module is imported by its
boot function, so an unused backend costs nothing at load.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from pytest_specgate.contracts.engine_backend import BootFunction, EngineBackend
from pytest_specgate.contracts.engine_options import (
    ENDPOINT_OPTIONS,
    MLX_OPTIONS,
    MOCK_OPTIONS,
    VLLM_OPTIONS,
)
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import DEFAULT_BACKEND, ENTRY_POINT_GROUP

if TYPE_CHECKING:
    from pytest_specgate.contracts.engine import Engine
    from pytest_specgate.contracts.engine_config import EngineConfig

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
]


def _boot_mock(config: EngineConfig, workdir: Path) -> Engine:
    from pytest_specgate.engines.mock import boot

    return boot(config, workdir)


def _boot_mlx(config: EngineConfig, workdir: Path) -> Engine:
    from pytest_specgate.engines.mlx import boot

    return boot(config, workdir)


def _boot_vllm(config: EngineConfig, workdir: Path) -> Engine:
    from pytest_specgate.engines.vllm import boot

    return boot(config, workdir)


def _boot_endpoint(config: EngineConfig, workdir: Path) -> Engine:
    from pytest_specgate.engines.endpoint import boot

    return boot(config, workdir)


@final
@dataclass(frozen=True)
class Backend:
    """A backend by name: where it comes from and how to load its definition.

    ``load`` returns the :class:`EngineBackend` (boot function and declared options); for
    an entry point it imports the third-party module, once per process.
    """

    name: str
    origin: str
    load: Callable[[], EngineBackend] = field(compare=False, repr=False)

    def definition(self) -> EngineBackend:
        return self.load()


_BUILT_IN = "built in"


def _built_in(name: str, definition: EngineBackend) -> Backend:
    return Backend(name, _BUILT_IN, lambda: definition)


BUILTIN_BACKENDS: Final[Mapping[str, Backend]] = {
    "mock": _built_in("mock", EngineBackend(_boot_mock, MOCK_OPTIONS.values())),
    "mlx": _built_in("mlx", EngineBackend(_boot_mlx, MLX_OPTIONS.values(), builds_tiny_models=True)),
    "vllm": _built_in("vllm", EngineBackend(_boot_vllm, VLLM_OPTIONS.values(), builds_tiny_models=True)),
    "endpoint": _built_in("endpoint", EngineBackend(_boot_endpoint, ENDPOINT_OPTIONS.values())),
}


def _loader(entry: metadata.EntryPoint, origin: str) -> Callable[[], EngineBackend]:
    @functools.cache
    def load() -> EngineBackend:
        try:
            loaded: object = entry.load()
        except (ImportError, AttributeError, ValueError) as exc:
            raise SpecgateInputError(
                f"engine backend {entry.name!r} ({origin}) cannot be loaded: {type(exc).__name__}: {exc}",
                where=f"engine backend {entry.name!r}", expected="an importable EngineBackend",
                found=f"{type(exc).__name__}: {exc}",
            ) from None
        if isinstance(loaded, EngineBackend):
            return loaded
        if callable(loaded):
            return EngineBackend(loaded)  # a bare boot function declares no options
        raise SpecgateInputError(
            f"engine backend {entry.name!r} ({origin}) names a {type(loaded).__name__}, not an "
            "EngineBackend or a boot function",
            where=f"engine backend {entry.name!r}", expected="an EngineBackend or a boot function",
            found=type(loaded).__name__,
        )

    return load


def backends_from_entry_points(entry_points: Iterable[metadata.EntryPoint]) -> dict[str, Backend]:
    """The built-ins plus one backend per entry point; a clash is an input error naming both sides."""
    found: dict[str, Backend] = dict(BUILTIN_BACKENDS)
    for entry in entry_points:
        origin = f"entry point {entry.name} = {entry.value} ({_distribution_of(entry)})"
        clash = found.get(entry.name)
        if clash is not None:
            raise SpecgateInputError(
                f"engine backend {entry.name!r}: {origin} clashes with the {clash.origin} one; "
                f"rename one of them in group {ENTRY_POINT_GROUP}",
                where=f"engine backend {entry.name!r}", expected="one backend per name", found=origin,
            )
        found[entry.name] = Backend(entry.name, origin, _loader(entry, origin))
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
        f"(more register through the entry-point group {ENTRY_POINT_GROUP})",
        where=where, expected=f"one of {', '.join(sorted(installed))}", found=repr(name),
    )


def boot_function(name: str) -> BootFunction:
    """The boot function of the backend called ``name`` (loading its entry point if need be)."""
    return backend_named(name, "engine").definition().boot
