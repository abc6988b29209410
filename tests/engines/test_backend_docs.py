"""The backend guide shows the example package as it is, and the engines page lists the options
the built-in backends declare."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pytest_specgate.backends
from pytest_specgate.contracts.engine_options import ENDPOINT_OPTIONS, MLX_OPTIONS, MOCK_OPTIONS, VLLM_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "backends" / "specgate-echo"
_SHOWN = re.compile(r"<!-- example: (\S+) -->\n```\w*\n(.*?)```", re.DOTALL)


def test_every_example_file_the_guide_shows_is_shown_as_it_is() -> None:
    shown = dict(_SHOWN.findall((ROOT / "docs" / "backends.md").read_text(encoding="utf-8")))
    assert set(shown) == {"pyproject.toml", "specgate_echo/__init__.py"}
    for path, text in shown.items():
        assert text == (EXAMPLE / path).read_text(encoding="utf-8"), f"docs/backends.md shows an old {path}"


def _documented_rows() -> set[tuple[str, str, str, str]]:
    text = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
    table = text.split("<!-- backend-options-table -->")[1].split("<!-- /backend-options-table -->")[0]
    rows = re.findall(r"^\| (\w+) \| `(\w+)` \| (.*?) \| (.*?) \|$", table, re.MULTILINE)
    return set(rows)


@pytest.mark.parametrize(("backend", "declared"), [("mock", MOCK_OPTIONS), ("mlx", MLX_OPTIONS),
                                                   ("vllm", VLLM_OPTIONS), ("endpoint", ENDPOINT_OPTIONS)])
def test_the_engines_page_lists_each_declared_option(backend: str, declared: dict[str, object]) -> None:
    rows = {row for row in _documented_rows() if row[0] == backend}
    assert rows == {(backend, option.name, option.expected(), option.meaning)  # type: ignore[attr-defined]
                    for option in declared.values()}


def test_every_name_the_guide_documents_imports_from_the_backend_kit() -> None:
    text = (ROOT / "docs" / "backends.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^### `(\w+)", text, re.MULTILINE))
    named |= set(re.findall(r"\*\*`(\w+)\(", text))
    named |= {"Engine", "BootFunction", "EngineBootError", "EngineStartupRefused", "EngineHTTPError",
              "MissingCapability", "TelemetryReset", "FaultInjection", "WarmSwap", "EngineProcess",
              "RawStatus", "ServerProcess", "OptionType", "acceptance_rate_of", "telemetry_from_status"}
    assert {"EngineBackend", "EngineOption", "ChatResult", "StreamResult", "Telemetry", "Capabilities",
            "start_server", "OpenAIClient", "ClientEngine"} <= named
    missing = sorted(name for name in named if name not in pytest_specgate.backends.__all__)
    assert missing == []
    assert all(getattr(pytest_specgate.backends, name) is not None for name in named)
