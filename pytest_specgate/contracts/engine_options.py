"""The options a backend takes in ``@pytest.mark.engine(...)``: each with a name, a type and a meaning.

A backend declares its options as :class:`EngineOption` values (built-ins here, third-party
backends in their ``EngineBackend``); the plugin checks every marker against them at
collection, so ``gama=3`` or ``alpha="high"`` is one line naming the test, the marker and
the option instead of a pass or a traceback at setup. The same declarations are the
reference table of docs/backends.md and docs/engines.md.
"""

from __future__ import annotations

import difflib
import enum
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, final

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import is_count, is_finite_positive, is_fraction, is_real, is_whole

__all__ = [
    "ENDPOINT_OPTIONS",
    "MLX_OPTIONS",
    "MOCK_OPTIONS",
    "VLLM_OPTIONS",
    "EngineOption",
    "OptionTable",
    "OptionType",
    "check_engine_options",
    "closest_name",
    "option_table",
]


def _strings(value: object) -> bool:
    return isinstance(value, tuple | list) and all(isinstance(item, str) for item in value)


def _names(value: object) -> bool:
    return isinstance(value, str) or _strings(value)


def _integers(value: object) -> bool:
    return isinstance(value, tuple | list) and all(is_whole(item) for item in value)


_CHECKS: Final[Mapping[str, tuple[str, Callable[[object], bool]]]] = {
    "number": ("a number", lambda value: is_real(value) and math.isfinite(value)),
    "non_negative": ("a number >= 0", lambda value: is_real(value) and math.isfinite(value) and value >= 0),
    "positive": ("a number > 0", is_finite_positive),
    "fraction": ("a number within [0, 1]", is_fraction),
    "integer": ("an integer", is_whole),
    "non_negative_integer": ("an integer >= 0", lambda value: is_count(value, 0)),
    "count": ("an integer >= 1", is_count),
    "string": ("a string", lambda value: isinstance(value, str)),
    "boolean": ("True or False", lambda value: isinstance(value, bool)),
    "strings": ("a list of strings", _strings),
    "names": ("a string or a list of strings", _names),
    "integers": ("a list of integers", _integers),
    "json": ("any JSON-like value", lambda value: True),
}


class OptionType(enum.StrEnum):
    """The type of an option's value; ``describe()`` is how an error and the docs say it."""

    NUMBER = "number"
    NON_NEGATIVE = "non_negative"
    POSITIVE = "positive"
    FRACTION = "fraction"
    INTEGER = "integer"
    NON_NEGATIVE_INTEGER = "non_negative_integer"
    COUNT = "count"
    STRING = "string"
    BOOLEAN = "boolean"
    STRINGS = "strings"
    NAMES = "names"
    INTEGERS = "integers"
    JSON = "json"

    def describe(self) -> str:
        return _CHECKS[self.value][0]

    def accepts(self, value: object) -> bool:
        """Whether ``value`` has this type (a list given to a marker arrives as a tuple)."""
        return _CHECKS[self.value][1](value)


@final
@dataclass(frozen=True)
class EngineOption:
    """One keyword of ``@pytest.mark.engine``: its name, its type and what it means.

    ``choices``, when given, are the only values the option takes (each of the type).
    """

    name: str
    type: OptionType
    meaning: str
    choices: tuple[object, ...] = ()

    def problem(self, value: object) -> str | None:
        """Why ``value`` does not fit, or None when it does."""
        if not self.type.accepts(value):
            return f"must be {self.type.describe()}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(repr(choice) for choice in self.choices)}, got {value!r}"
        return None

    def expected(self) -> str:
        """The type as the reference tables say it."""
        if self.choices:
            return f"one of {', '.join(repr(choice) for choice in self.choices)}"
        return self.type.describe()


OptionTable = Mapping[str, EngineOption]
"""A backend's options by name."""


def option_table(options: Iterable[EngineOption]) -> OptionTable:
    """Options by name; a name declared twice is a programming error of the backend."""
    table: dict[str, EngineOption] = {}
    for option in options:
        if option.name in table:
            raise ValueError(f"engine option {option.name!r} is declared twice")
        table[option.name] = option
    return dict(sorted(table.items()))


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name a typo most likely meant (difflib), or None when none is close."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def check_engine_options(options: Mapping[str, object], declared: OptionTable, *, backend: str,
                         where: str) -> None:
    """Every option is declared by ``backend`` and of its type; else one SpecgateInputError line.

    ``where`` names the test and the marker, e.g. ``test_x.py::test_y: @pytest.mark.engine``.
    """
    for name in sorted(options):
        option = declared.get(name)
        if option is None:
            guess = closest_name(name, declared)
            hint = f" (did you mean {guess}?)" if guess else ""
            takes = f"it takes {', '.join(declared)}" if declared else "it declares no options"
            raise SpecgateInputError(
                f"{where}: option {name}: the {backend} backend has no option {name}{hint}; {takes}",
                where=f"{where}: option {name}", expected=f"an option of the {backend} backend",
                found=repr(name),
            )
        problem = option.problem(options[name])
        if problem is not None:
            raise SpecgateInputError(
                f"{where}: option {name} of the {backend} backend {problem} ({option.meaning})",
                where=f"{where}: option {name}", expected=option.expected(), found=repr(options[name]),
            )


_O = EngineOption
_T = OptionType
_BOOT_TIMEOUT = _O("boot_timeout_s", _T.POSITIVE, "seconds to wait for the engine to become healthy")
_REQUEST_TIMEOUT = _O("request_timeout_s", _T.POSITIVE, "seconds one HTTP request may take")
_MODEL_CACHE = _O("model_cache", _T.STRING,
                  "folder where the tiny: and local-pair: models are built (set by the plugin)")

MOCK_OPTIONS: Final = option_table([
    _O("alpha", _T.FRACTION, "the draft's agreement with the target at each position"),
    _O("target_step_ms", _T.NON_NEGATIVE, "simulated milliseconds of one target forward pass"),
    _O("draft_step_ms", _T.NON_NEGATIVE, "simulated milliseconds per drafted token"),
    _O("vocab", _T.STRING, "the target's vocabulary name"),
    _O("draft_vocab", _T.STRING, "the draft's vocabulary name (another one: tokenizer mismatch at start-up)"),
    _O("seed", _T.INTEGER, "seed of the deterministic target model"),
    _O("eos_one_in", _T.NON_NEGATIVE_INTEGER, "about one token in N ends the answer"),
    _O("memory_budget_gb", _T.POSITIVE,
       "simulated memory; target + draft + KV cache above it refuse start-up"),
    _O("target_size_gb", _T.NON_NEGATIVE, "simulated size of the target's weights"),
    _O("draft_size_gb", _T.NON_NEGATIVE, "simulated size of the draft's weights"),
    _O("kv_cache_gb", _T.NON_NEGATIVE, "simulated size of the KV cache"),
    _O("gated_features", _T.NAMES, "request features that force the non-speculative path"),
    _O("faults", _T.NAMES, "violations and transient faults kind[:count[:seconds]] to inject"),
    _O("violations", _T.NAMES, "persistent spec violations to inject"),
    _O("roll_period_s", _T.POSITIVE, "seconds per telemetry window"),
    _O("default_max_tokens", _T.COUNT, "max_tokens of a request that gives none"),
    _O("max_model_len", _T.COUNT, "context length in tokens"),
    _O("speculation_support", _T.BOOLEAN, "False models a build without speculative decoding"),
    _O("isolation", _T.STRING, "serve in this process or in a subprocess", ("thread", "subprocess")),
    _BOOT_TIMEOUT,
    _REQUEST_TIMEOUT,
])
MLX_OPTIONS: Final = option_table([
    _BOOT_TIMEOUT,
    _O("context_tokens", _T.POSITIVE, "context length the memory check budgets for"),
    _O("max_tokens", _T.POSITIVE, "mlx_lm.server --max-tokens"),
    _O("memory_limit_bytes", _T.POSITIVE, "memory the pre-boot check budgets against (default: the host's)"),
    _MODEL_CACHE,
    _O("prompt_cache_size", _T.NON_NEGATIVE_INTEGER,
       "mlx_lm.server --prompt-cache-size, 0 turns the cache off"),
    _REQUEST_TIMEOUT,
])
VLLM_OPTIONS: Final = option_table([
    _O("mode", _T.STRING, "start vLLM as a process or through docker compose", ("process", "compose")),
    _BOOT_TIMEOUT,
    _MODEL_CACHE,
    _O("speculative_method", _T.STRING, "vLLM's speculative method (default draft_model with a draft)"),
    _O("max_model_len", _T.COUNT, "vLLM --max-model-len"),
    _O("gpu_memory_utilization", _T.FRACTION, "vLLM --gpu-memory-utilization"),
    _O("python", _T.STRING, "process mode: the interpreter that has vLLM"),
    _O("dtype", _T.STRING, "process mode: vLLM --dtype"),
    _O("enforce_eager", _T.BOOLEAN, "process mode: vLLM --enforce-eager"),
    _O("prompt_lookup_max", _T.COUNT, "process mode: n-gram speculation, longest n-gram"),
    _O("prompt_lookup_min", _T.COUNT, "process mode: n-gram speculation, shortest n-gram"),
    _O("image", _T.STRING, "compose mode: the pinned image reference"),
    _O("weights_dir", _T.STRING, "compose mode: the host folder holding the weights"),
    _O("gpu_indices", _T.INTEGERS, "compose mode: the GPUs to use"),
    _O("weight_format", _T.STRING, "compose mode: format of the weights"),
    _O("compute_dtype", _T.STRING, "compose mode: vLLM --dtype"),
    _O("kv_cache_dtype", _T.STRING, "compose mode: vLLM --kv-cache-dtype"),
    _O("tensor_parallel_size", _T.COUNT, "compose mode: vLLM --tensor-parallel-size"),
    _O("max_num_seqs", _T.COUNT, "compose mode: vLLM --max-num-seqs"),
    _O("trust_remote_code", _T.BOOLEAN, "compose mode: vLLM --trust-remote-code"),
    _O("required_gpu_memory_bytes", _T.COUNT, "compose mode: refuse a host with less GPU memory"),
    _O("image_platforms", _T.STRINGS, "compose mode: the platforms the image is built for"),
    _O("image_min_compute_capability", _T.STRING, "compose mode: the lowest compute capability it runs on"),
    _O("host_facts", _T.STRING, "compose mode: host facts file eligibility is judged on (set by the plugin)"),
])
ENDPOINT_OPTIONS: Final = option_table([
    _O("url", _T.STRING, "the running server (default: --specgate-endpoint)"),
    _O("health_path", _T.STRING, "route polled until it answers 200"),
    _O("health_deadline_s", _T.POSITIVE, "seconds to wait for the health route"),
    _O("api_key", _T.STRING, "bearer token sent to the server"),
    _REQUEST_TIMEOUT,
])
