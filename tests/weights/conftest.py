"""Fixtures for the verified-weights tests: an isolated hub environment and tiny repos."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hubfake import FakeRepo, tiny_model_files

HUB_ENVIRONMENT_UNSET = ("HF_TOKEN", "HF_ENDPOINT", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE")


@pytest.fixture(autouse=True)
def isolated_hub_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No stored token, no real endpoint, a throwaway HF_HOME; yields that HF_HOME."""
    hf_home = tmp_path / "hf-home"
    hf_home.mkdir()
    for name in HUB_ENVIRONMENT_UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    yield hf_home


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    """Parent of every destination; its ``.incomplete`` must be gone after each fetch."""
    path = tmp_path / "models"
    path.mkdir()
    return path


@pytest.fixture
def public_repo() -> FakeRepo:
    return FakeRepo.from_contents("specgate-test/tiny-target", tiny_model_files(seed=1))


@pytest.fixture
def private_token() -> str:
    return "fake-hub-token-for-tests"


@pytest.fixture
def private_repo(private_token: str) -> FakeRepo:
    files = tiny_model_files(seed=2)
    return FakeRepo.from_contents("specgate-test/tiny-private", files, token=private_token)
