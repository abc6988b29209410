"""What only a fresh interpreter can show: the ``HF_ENDPOINT`` route and a real failed write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hubfake import FakeRepo, running_fake_hub, staging_leftovers, tiny_model_files

CHILD = Path(__file__).with_name("fetch_child.py")
WEIGHTS = "model.safetensors"


def run_child(arguments: dict[str, object], *, hf_home: Path, endpoint: str, cwd: Path) -> dict[str, object]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("HF_", "HUGGING_FACE_"))
    }
    environment.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(hf_home),
        HF_HUB_OFFLINE="0",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    completed = subprocess.run(
        [sys.executable, str(CHILD), json.dumps(arguments)],
        env=environment,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    outcome: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return outcome


def test_hf_endpoint_from_the_environment_reaches_the_fake(
    public_repo: FakeRepo, models_dir: Path, isolated_hub_environment: Path
) -> None:
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub:
        outcome = run_child(
            {
                "repo_id": public_repo.repo_id,
                "revision": "main",
                "destination": str(destination),
                "endpoint": None,
            },
            hf_home=isolated_hub_environment,
            endpoint=hub.base_url,
            cwd=models_dir,
        )

    assert outcome["ok"] is True, outcome
    assert outcome["revision"] == public_repo.commit
    assert WEIGHTS in hub.downloads(public_repo.repo_id)
    assert (destination / WEIGHTS).read_bytes() == public_repo.files[WEIGHTS].content
    assert not (isolated_hub_environment / "hub").exists(), "huggingface cache must stay unused"
    assert staging_leftovers(models_dir) == []


def test_a_write_refused_by_the_filesystem_is_a_disk_space_error(
    models_dir: Path, isolated_hub_environment: Path
) -> None:
    repo = FakeRepo.from_contents("specgate-test/too-big", tiny_model_files(seed=6, rows=256))
    weights_size = len(repo.files[WEIGHTS].content)
    limit = 16 * 1024
    assert weights_size > 2 * limit
    destination = models_dir / "too-big"
    with running_fake_hub([repo]) as hub:
        outcome = run_child(
            {
                "repo_id": repo.repo_id,
                "revision": "main",
                "destination": str(destination),
                "endpoint": hub.base_url,
                "file_size_limit": limit,
            },
            hf_home=isolated_hub_environment,
            endpoint=hub.base_url,
            cwd=models_dir,
        )

    assert outcome["ok"] is False, outcome
    assert outcome["error"] == "disk-space"
    assert "EFBIG" in str(outcome["message"])
    assert repo.repo_id in str(outcome["message"])
    assert WEIGHTS in hub.downloads(repo.repo_id)
    assert staging_leftovers(models_dir) == []
    assert not destination.exists()
