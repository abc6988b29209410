"""`specgate tiny-models --out=DIR`: the tiny local models, built outside pytest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_specgate.cli import main
from pytest_specgate.fetching.tiny_models import TINY_MODEL_ROLES


def test_builds_every_role_and_prints_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    assert main(["tiny-models", f"--out={tmp_path}"]) == 0
    printed = dict(line.split(maxsplit=1) for line in capsys.readouterr().out.splitlines())
    assert list(printed) == [f"tiny:{role}" for role in TINY_MODEL_ROLES]
    for path in printed.values():
        assert Path(path).is_relative_to(tmp_path)
        assert (Path(path) / "config.json").is_file() and (Path(path) / "tokenizer.json").is_file()


def test_json_names_every_role_and_its_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    assert main(["tiny-models", f"--out={tmp_path}"]) == 0
    printed = dict(line.split(maxsplit=1) for line in capsys.readouterr().out.splitlines())
    assert main(["tiny-models", f"--out={tmp_path}", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {"schema": "specgate.tiny-models/1", "models": printed}


def test_without_tokenizers_says_which_extra_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    assert main(["tiny-models", f"--out={tmp_path}"]) == 2
    assert capsys.readouterr().err == (
        "specgate tiny-models: building tiny models needs tokenizers and safetensors (tokenizers is "
        "missing): pip install 'pytest-specgate[tiny]'\n"
    )
