"""Engine configuration: one hashable value per distinct engine.

Being hashable is what lets the engine pool boot each distinct configuration once
per session (once per xdist worker) and share it between tests. It is a pure value:
how a configuration is resolved from markers and options lives in ``engines.config``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, final, overload

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import is_finite_positive, is_whole

__all__ = ["BY_ENDPOINT", "BY_OPTION", "NAMED_FIELDS", "EngineConfig", "RunEngineOptions", "freeze_option"]

NAMED_FIELDS: Final = ("backend", "target", "draft", "num_draft_tokens")
"""The engine marker's keywords that are fields, not backend options."""
BY_OPTION: Final = "--specgate-engine"
BY_ENDPOINT: Final = "--specgate-endpoint"


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
    except TypeError:
        raise SpecgateInputError(
            f"engine option value {value!r} is not hashable ({type(value).__name__})",
            where="engine option value", expected="a hashable value", found=repr(value),
        ) from None
    return value


@dataclass(frozen=True)
class EngineConfig:
    """Everything that distinguishes one engine instance from another.

    ``backend`` names the backend; ``target`` and ``draft`` the models (``draft`` None: no
    speculation); ``num_draft_tokens`` is γ; ``options`` are the backend's own keywords,
    sorted ``(name, value)`` pairs with lists frozen to tuples.
    """

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
        """A positive number option (seconds, bytes, a fraction); anything else is an input error."""
        value = self.option(name, default)
        if not is_finite_positive(value):
            raise self._option_error(name, "a positive number", value)
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
            raise self._option_error(name, wanted, value)
        return value

    def _option_error(self, name: str, wanted: str, value: object) -> SpecgateInputError:
        where = f"{self.backend} engine ({self.describe()}): option {name}"
        return SpecgateInputError(f"{where} must be {wanted}, got {value!r}", where=where, expected=wanted,
                                  found=repr(value))

    def with_options(self, **changes: object) -> EngineConfig:
        """A copy with some options added or replaced (options stay sorted)."""
        merged = dict(self.options)
        merged.update({key: freeze_option(value) for key, value in changes.items()})
        return dataclasses.replace(self, options=tuple(sorted(merged.items())))

    def changed(self, **changes: object) -> EngineConfig:
        """A copy with named fields replaced (``draft=None`` turns speculation off) and the
        other keywords set as backend options."""
        named = {key: value for key, value in changes.items() if key in NAMED_FIELDS}
        options = {key: value for key, value in changes.items() if key not in NAMED_FIELDS}
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


@final
@dataclass(frozen=True)
class RunEngineOptions:
    """What the command line (or the ini file) says about engines for the whole run.

    ``engine`` None: no backend was asked for; ``options`` are ``--specgate-engine-option``
    pairs, set over every engine's marker.
    """

    engine: str | None = None
    endpoint: str | None = None
    options: tuple[tuple[str, object], ...] = ()

    @property
    def backend(self) -> str | None:
        """The backend the run asks for, if any (an endpoint URL alone asks for ``endpoint``)."""
        return self.engine or ("endpoint" if self.endpoint else None)

    def source(self) -> str:
        """Which option chose :attr:`backend` (the evidence's ``selected_by``)."""
        return BY_OPTION if self.engine else BY_ENDPOINT
