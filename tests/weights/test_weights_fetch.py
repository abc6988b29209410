"""Happy paths of ``fetch_verified`` against the fake hub: what lands, what is recorded."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hubfake import (
    FakeRepo,
    running_fake_hub,
    staging_leftovers,
    tiny_model_files,
    tree_bytes,
)

from pytest_specgate.fetching.weights import fetch_verified, free_bytes

ALLOWED_FILES = {
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "model.safetensors",
}
OUTSIDE_ALLOW_LIST = ("README.md", ".gitattributes", "pytorch_model.bin", "original/consolidated.00.pth")


def test_fetch_places_verified_files_and_records_resolved_commit(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub:
        snapshot = fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert snapshot.repo_id == public_repo.repo_id
    assert snapshot.requested_revision == "main"
    assert snapshot.revision == public_repo.commit
    assert snapshot.destination == destination
    assert tree_bytes(destination) == {p: public_repo.files[p].content for p in ALLOWED_FILES}
    recorded = {f.path: (f.size, f.sha256) for f in snapshot.files}
    assert recorded == {
        p: (len(public_repo.files[p].content), hashlib.sha256(public_repo.files[p].content).hexdigest())
        for p in ALLOWED_FILES
    }
    assert {f.path: f.verified_by for f in snapshot.files}["model.safetensors"] == "sha256"
    assert {f.path: f.verified_by for f in snapshot.files}["config.json"] == "git-blob-sha1"
    assert staging_leftovers(models_dir) == []
    assert not (destination / ".cache").exists()


def test_every_request_after_resolution_is_pinned_to_the_commit(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    with running_fake_hub([public_repo]) as hub:
        fetch_verified(public_repo.repo_id, "main", models_dir / "target", endpoint=hub.base_url)

    first, *rest = hub.request_log
    assert first.path == f"/api/models/{public_repo.repo_id}/revision/main"
    assert rest
    assert all(public_repo.commit in r.path for r in rest), [r.path for r in rest]


def test_fetch_by_commit_sha_gives_the_same_snapshot(public_repo: FakeRepo, models_dir: Path) -> None:
    with running_fake_hub([public_repo]) as hub:
        by_branch = fetch_verified(public_repo.repo_id, "main", models_dir / "a", endpoint=hub.base_url)
        by_commit = fetch_verified(
            public_repo.repo_id, public_repo.commit, models_dir / "b", endpoint=hub.base_url
        )

    assert by_commit.revision == by_branch.revision == public_repo.commit
    assert by_commit.files == by_branch.files


def test_files_outside_the_allow_list_are_never_requested(public_repo: FakeRepo, models_dir: Path) -> None:
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub:
        fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)

    for path in OUTSIDE_ALLOW_LIST:
        assert hub.file_requests(public_repo.repo_id, path) == ()
        assert not (destination / path).exists()
    assert set(hub.downloads(public_repo.repo_id)) == ALLOWED_FILES


def test_a_narrower_allow_list_fetches_only_what_it_names(public_repo: FakeRepo, models_dir: Path) -> None:
    destination = models_dir / "weights-only"
    with running_fake_hub([public_repo]) as hub:
        snapshot = fetch_verified(
            public_repo.repo_id,
            "main",
            destination,
            allow_patterns=("*.safetensors", "config.json"),
            endpoint=hub.base_url,
        )

    assert [f.path for f in snapshot.files] == ["config.json", "model.safetensors"]
    assert set(hub.downloads(public_repo.repo_id)) == {"config.json", "model.safetensors"}


def test_sharded_weights_are_each_verified_and_the_index_is_complete(models_dir: Path) -> None:
    repo = FakeRepo.from_contents("specgate-test/sharded", tiny_model_files(seed=3, shards=3))
    with running_fake_hub([repo]) as hub:
        snapshot = fetch_verified(repo.repo_id, "main", models_dir / "sharded", endpoint=hub.base_url)

    shards = [f for f in snapshot.files if f.path.endswith(".safetensors")]
    assert [f.path for f in shards] == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert all(f.verified_by == "sha256" for f in shards)
    assert "model.safetensors.index.json" in {f.path for f in snapshot.files}


def test_private_repo_is_fetched_with_the_bearer_token(
    private_repo: FakeRepo, private_token: str, models_dir: Path
) -> None:
    with running_fake_hub([private_repo]) as hub:
        snapshot = fetch_verified(
            private_repo.repo_id,
            "main",
            models_dir / "private",
            token=private_token,
            endpoint=hub.base_url,
        )

    assert snapshot.revision == private_repo.commit
    assert {r.authorization for r in hub.request_log} == {f"Bearer {private_token}"}


def test_an_identical_existing_destination_is_reverified_not_downloaded_again(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub:
        first = fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)
        downloads_before = len(hub.downloads(public_repo.repo_id))
        again = fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert again == first
    assert len(hub.downloads(public_repo.repo_id)) == downloads_before
    assert staging_leftovers(models_dir) == []


def test_an_empty_destination_directory_counts_as_absent(public_repo: FakeRepo, models_dir: Path) -> None:
    destination = models_dir / "target"
    destination.mkdir()
    with running_fake_hub([public_repo]) as hub:
        snapshot = fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert set(tree_bytes(destination)) == {f.path for f in snapshot.files}


def test_the_record_is_plain_json_with_every_digest(public_repo: FakeRepo, models_dir: Path) -> None:
    with running_fake_hub([public_repo]) as hub:
        snapshot = fetch_verified(public_repo.repo_id, "main", models_dir / "target", endpoint=hub.base_url)

    record = json.loads(json.dumps(snapshot.to_record()))
    assert record["revision"] == public_repo.commit
    assert record["requested_revision"] == "main"
    digests = {f["path"]: f["sha256"] for f in record["files"]}
    assert digests["model.safetensors"] == public_repo.files["model.safetensors"].sha256


def test_a_single_pattern_string_is_one_pattern(public_repo: FakeRepo, models_dir: Path) -> None:
    with running_fake_hub([public_repo]) as hub:
        snapshot = fetch_verified(
            public_repo.repo_id,
            "main",
            models_dir / "weights",
            allow_patterns="*.safetensors",
            endpoint=hub.base_url,
        )

    assert [f.path for f in snapshot.files] == ["model.safetensors"]


def test_a_concurrent_fetch_that_finished_first_is_accepted_when_identical(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    """The disk check runs after the destination check and before staging: a rival
    fetch run from there lands first, so our final rename meets a full directory."""
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub:

        def rival_lands_first(where: Path) -> int:
            fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)
            return free_bytes(where)

        ours = fetch_verified(
            public_repo.repo_id,
            "main",
            destination,
            endpoint=hub.base_url,
            disk_free=rival_lands_first,
        )

    assert hub.downloads(public_repo.repo_id).count("model.safetensors") == 2
    assert {f.path: f.sha256 for f in ours.files} == {
        p: hashlib.sha256(data).hexdigest() for p, data in tree_bytes(destination).items()
    }
    assert staging_leftovers(models_dir) == []
