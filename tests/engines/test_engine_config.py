"""EngineConfig resolution (a marker's backend > option > default) and EnginePool sharing and teardown."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_specgate.contracts.engine_config import EngineConfig, RunEngineOptions, freeze_option
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.backends import BUILTIN_BACKENDS, boot_function
from pytest_specgate.engines.config import EnginePool, engine_config_from
from pytest_specgate.engines.mock import MockEngine

NO_OPTIONS = RunEngineOptions()


def test_default_backend_is_mock() -> None:
    assert engine_config_from({}, NO_OPTIONS) == EngineConfig(backend="mock")


def test_marker_beats_option_beats_default() -> None:
    assert engine_config_from({}, RunEngineOptions("vllm")).backend == "vllm"
    assert engine_config_from({"backend": "mock"}, RunEngineOptions("vllm")).backend == "mock"
    assert engine_config_from({}, RunEngineOptions("vllm"), ("mlx",)).backend == "mlx"


def test_endpoint_url_selects_the_endpoint_backend() -> None:
    config = engine_config_from({}, RunEngineOptions(endpoint="http://127.0.0.1:9"))
    assert config.backend == "endpoint" and config.option("url") == "http://127.0.0.1:9"
    explicit = engine_config_from({"url": "http://127.0.0.1:8"}, RunEngineOptions("endpoint"))
    assert explicit.option("url") == "http://127.0.0.1:8"


def test_named_fields_and_sorted_hashable_options() -> None:
    marker = {"target": "t", "draft": "d", "num_draft_tokens": 3, "image_platforms": ["b", "a"],
              "gpu_indices": [1, 2], "gpu_memory_utilization": 0.5}
    config = engine_config_from(marker, RunEngineOptions("vllm"))
    assert (config.target, config.draft, config.num_draft_tokens) == ("t", "d", 3)
    assert config.options == (
        ("gpu_indices", (1, 2)), ("gpu_memory_utilization", 0.5), ("image_platforms", ("b", "a"))
    )
    assert freeze_option({"b": [1, {2}], "a": None}) == (("a", None), ("b", (1, (2,))))
    reordered = dict(reversed(list(marker.items())), gpu_indices=(1, 2))
    assert hash(config) == hash(engine_config_from(reordered, RunEngineOptions("vllm")))
    assert config.with_options(gpu_memory_utilization=0.9).option("gpu_memory_utilization") == 0.9
    assert "gamma=3" in config.describe()


@pytest.mark.parametrize(
    ("marker", "options", "args", "message"),
    [
        ({"backend": "tgi"}, NO_OPTIONS, (), "unknown engine backend 'tgi'"),
        ({}, RunEngineOptions("nope"), (), "unknown engine backend 'nope'"),
        ({"num_draft_tokens": 0}, NO_OPTIONS, (), "num_draft_tokens must be a positive integer, got 0"),
        ({"num_draft_tokens": "4"}, NO_OPTIONS, (), "num_draft_tokens must be a positive integer"),
        ({"target": 3}, NO_OPTIONS, (), "target must be a string"),
        ({}, NO_OPTIONS, ("mock", "mlx"), "at most one positional argument"),
        ({"backend": "mock"}, NO_OPTIONS, ("mock",), "backend given both"),
        ({}, RunEngineOptions("endpoint"), (), "the endpoint backend needs a URL"),
        ({"alpha": 0.5, "gama": 3}, NO_OPTIONS, (),
         r"option gama: the mock backend has no option gama; it takes alpha, "),
        ({"urll": "http://x"}, RunEngineOptions("endpoint", "http://127.0.0.1:9"), (),
         r"option urll: the endpoint backend has no option urll \(did you mean url\?\)"),
        ({"gpu_memory_utilisation": 0.5}, RunEngineOptions("vllm"), (),
         r"option gpu_memory_utilisation: the vllm backend has no option gpu_memory_utilisation "
         r"\(did you mean gpu_memory_utilization\?\); it takes boot_timeout_s, "),
        ({"alpha": "high"}, NO_OPTIONS, (),
         r"option alpha of the mock backend must be a number within \[0, 1\], got 'high' \(the draft's"),
        ({"isolation": "process"}, NO_OPTIONS, (),
         r"option isolation of the mock backend must be one of 'thread', 'subprocess', got 'process'"),
        ({}, RunEngineOptions(options=(("seed", 1.5),)), (),
         r"^--specgate-engine-option: option seed of the mock backend must be an integer, got 1.5"),
    ],
)
def test_bad_engine_configuration_is_one_line_naming_the_test(
    marker: dict[str, object], options: RunEngineOptions, args: tuple[object, ...], message: str
) -> None:
    with pytest.raises(SpecgateInputError, match=message) as error:
        engine_config_from(marker, options, args, where="test_x.py::test_y")
    assert str(error.value).startswith(("test_x.py::test_y: ", "--specgate-engine-option: "))
    assert "\n" not in str(error.value)


def test_unhashable_option_is_an_input_error() -> None:
    with pytest.raises(SpecgateInputError, match="not hashable"):
        engine_config_from({"weird": bytearray(b"x")}, NO_OPTIONS)


def test_backends_resolve_by_name_and_an_unknown_one_is_a_usage_error() -> None:
    # That resolving loads only the named backend is checked in tests/foundation/test_lazy_imports.py.
    assert set(BUILTIN_BACKENDS) == {"mock", "mlx", "vllm", "endpoint"}
    assert boot_function("mock").__name__ == "_boot_mock"
    with pytest.raises(SpecgateInputError, match="unknown engine backend"):
        boot_function("tgi")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_pool_boots_once_per_config_and_close_all_leaves_nothing(tmp_path: Path) -> None:
    pool = EnginePool()
    spec = EngineConfig(backend="mock", draft="specgate-mock-draft", num_draft_tokens=2)
    plain = EngineConfig(backend="mock")
    try:
        first = pool.get(spec, tmp_path / "a")
        assert pool.get(spec, tmp_path / "b") is first
        other = pool.get(plain, tmp_path / "c")
        assert other is not first and len(pool) == 2 and spec in pool
    finally:
        pool.close_all()
    assert isinstance(first, MockEngine) and isinstance(other, MockEngine)
    assert not _listening(first.port) and not _listening(other.port)
    assert not [t for t in threading.enumerate() if t.name.startswith("specgate-mock-engine-")]
    assert len(pool) == 0


class _Closing:
    def __init__(self, fail: bool, log: list[str], name: str) -> None:
        self.fail, self.log, self.name = fail, log, name

    def close(self) -> None:
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} would not close")


def test_close_all_closes_every_engine_even_when_one_fails(tmp_path: Path) -> None:
    closed: list[str] = []
    fakes = {"a": _Closing(True, closed, "a"), "b": _Closing(False, closed, "b")}
    pool = EnginePool(boot=lambda config, _: fakes[str(config.target)])  # type: ignore[arg-type,return-value]
    pool.get(EngineConfig(backend="mock", target="a"), tmp_path)
    pool.get(EngineConfig(backend="mock", target="b"), tmp_path)
    with pytest.raises(ExceptionGroup, match="closing engines failed"):
        pool.close_all()
    assert sorted(closed) == ["a", "b"]


def test_typed_options_fall_back_to_the_default_and_keep_given_values() -> None:
    config = EngineConfig(backend="mlx").with_options(boot_timeout_s=2, max_num_seqs=0)
    assert config.positive_number_option("boot_timeout_s", 120.0) == 2.0
    assert config.positive_number_option("request_timeout_s", 120.0) == 120.0
    assert config.int_option("max_num_seqs", None, minimum=0) == 0
    assert config.int_option("prompt_lookup_max", None, minimum=1) is None
    assert config.int_option("max_model_len", 512, minimum=1) == 512


@pytest.mark.parametrize(
    ("value", "read", "message"),
    [
        (0, "number", "option x must be a positive number, got 0"),
        (True, "number", "option x must be a positive number, got True"),
        ("5", "number", "option x must be a positive number, got '5'"),
        (2.5, "any", "option x must be an integer, got 2.5"),
        (0, "positive", "option x must be a positive integer, got 0"),
        (-1, "count", "option x must be an integer >= 0, got -1"),
    ],
)
def test_a_bad_typed_option_is_an_input_error_naming_the_engine(
    value: object, read: str, message: str
) -> None:
    config = EngineConfig(backend="vllm", target="t").with_options(x=value)
    readers: dict[str, Callable[[], object]] = {
        "number": lambda: config.positive_number_option("x", 1.0),
        "any": lambda: config.int_option("x", None),
        "positive": lambda: config.int_option("x", None, minimum=1),
        "count": lambda: config.int_option("x", 0, minimum=0),
    }
    with pytest.raises(SpecgateInputError) as caught:
        readers[read]()
    assert str(caught.value) == f"vllm engine (vllm target=t x={value!r}): {message}"
