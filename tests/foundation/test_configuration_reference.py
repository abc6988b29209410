"""docs/configuration.md lists every option, ini key and ``[tool.specgate]`` key the plugin reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_specgate.contracts.project_keys import SPECGATE_KEYS
from pytest_specgate.plugin.options import pytest_addoption

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


class _Recorder:
    """Stands in for pytest's parser and option group: records what the plugin registers."""

    def __init__(self) -> None:
        self.options: list[str] = []
        self.ini: list[str] = []

    def getgroup(self, *args: object, **kwargs: object) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: object) -> None:
        self.options.extend(names)

    def addini(self, name: str, *args: object, **kwargs: object) -> None:
        self.ini.append(name)


def _first_cells() -> list[str]:
    return re.findall(r"^\| `([^`]+)` \|", REFERENCE.read_text(encoding="utf-8"), re.MULTILINE)


def test_every_option_and_ini_key_has_a_row() -> None:
    recorder = _Recorder()
    pytest_addoption(recorder)  # type: ignore[arg-type]
    text = REFERENCE.read_text(encoding="utf-8")
    documented = {cell.split("=")[0] for cell in _first_cells()}
    assert set(recorder.options) - documented == set()
    assert [name for name in recorder.ini if f"`{name}`" not in text] == []


@pytest.mark.parametrize("key", sorted(SPECGATE_KEYS.keys))
def test_every_project_key_has_a_row(key: str) -> None:
    assert any(cell == key or cell.startswith(f"{key}.") for cell in _first_cells()), key
