"""SPEC-028 reaches an engine's abilities only through its declared capabilities."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from pytest_specgate.engines import Capabilities

SPEC028 = Path(__file__).resolve().parents[2] / "acceptance" / "spec028"


@pytest.fixture
def backends(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SPEC028))
    return importlib.import_module("spec028_backends")


class Bare:
    """An engine that declares no ability at all."""

    backend = "bare"

    def capabilities(self) -> Capabilities:
        return Capabilities()


def test_a_missing_ability_the_profile_admits_skips_naming_the_backend(backends: ModuleType) -> None:
    with pytest.raises(pytest.skip.Exception, match=r"a warm swap cannot be checked on the mlx backend: "
                                                    r"mlx_lm\.server cannot swap"):
        backends.warm_swap(backends.MLX, Bare(), "tiny:target-b")


@pytest.mark.parametrize(
    ("call", "ability"),
    [
        (lambda b, e: b.warm_swap(b.MOCK, e, "tiny:target-b"), "warm swap"),
        (lambda b, e: b.roll_window(b.MOCK, e), "telemetry reset"),
        (lambda b, e: b.inject_draft_failure(b.MOCK, e), "fault injection"),
        (lambda b, e: b.in_flight(e), "raw status"),
    ],
)
def test_an_ability_the_profile_promises_but_the_engine_lacks_fails(
    backends: ModuleType, call: Callable[[ModuleType, Bare], object], ability: str
) -> None:
    with pytest.raises(AssertionError, match=f"^the bare engine has no {ability}, "
                                             "though its SPEC-028 profile says it has one$"):
        call(backends, Bare())


def test_process_facts_come_from_the_process_capability(backends: ModuleType) -> None:
    engine = Bare()
    assert backends.engine_pid(engine) == (os.getpid(),
                                           "this pytest process (bare engine runs on one of its threads)")
    assert (backends.engine_exit_code(engine), backends.engine_log(engine), backends.raw_status(engine)) == (
        None, None, None)
