"""Every failure of ``fetch_verified`` leaves no staging residue and an untouched destination."""

from __future__ import annotations

import fnmatch
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hubfake import (
    FakeRepo,
    FileFaults,
    running_fake_hub,
    staging_leftovers,
    tiny_model_files,
    tree_bytes,
)

from pytest_specgate.fetching.weights import (
    DEFAULT_ALLOW_PATTERNS,
    WeightProblem,
    WeightVerificationError,
    fetch_verified,
)

WEIGHTS = "model.safetensors"


@contextmanager
def refused(problem: WeightProblem) -> Iterator[pytest.ExceptionInfo[WeightVerificationError]]:
    """``pytest.raises`` for the one weights error, checking which step it says failed."""
    with pytest.raises(WeightVerificationError) as caught:
        yield caught
    assert caught.value.problem == problem, str(caught.value)


def assert_nothing_left(models_dir: Path, destination: Path) -> None:
    assert staging_leftovers(models_dir) == []
    assert not destination.exists()


@pytest.mark.parametrize("token", [False, "hf-wrong-token"], ids=["no-token", "wrong-token"])
def test_private_repo_without_a_valid_token_is_refused(
    private_repo: FakeRepo, models_dir: Path, token: str | bool
) -> None:
    destination = models_dir / "private"
    with running_fake_hub([private_repo]) as hub, refused("hub-access") as caught:
        fetch_verified(private_repo.repo_id, "main", destination, token=token, endpoint=hub.base_url)

    message = str(caught.value)
    assert private_repo.repo_id in message
    assert "@main" in message
    assert "HTTP 401" in caught.value.found
    assert hub.downloads(private_repo.repo_id) == ()
    assert {r.authorization for r in hub.request_log} == ({None} if token is False else {f"Bearer {token}"})
    assert_nothing_left(models_dir, destination)


def test_unknown_revision_is_not_found(public_repo: FakeRepo, models_dir: Path) -> None:
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub, refused("not-found") as caught:
        fetch_verified(public_repo.repo_id, "v9.9-missing", destination, endpoint=hub.base_url)

    assert caught.value.revision == "v9.9-missing"
    assert "HTTP 404" in caught.value.found
    assert_nothing_left(models_dir, destination)


def test_unknown_repo_is_not_found(public_repo: FakeRepo, models_dir: Path) -> None:
    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub, refused("not-found") as caught:
        fetch_verified("specgate-test/no-such-model", "main", destination, endpoint=hub.base_url)

    assert caught.value.repo_id == "specgate-test/no-such-model"
    assert_nothing_left(models_dir, destination)


@pytest.mark.parametrize(
    ("status", "kind"), [(403, "hub-access"), (503, "transfer")], ids=["gated-403", "hub-503"]
)
def test_http_error_on_one_file_names_that_file(
    public_repo: FakeRepo, models_dir: Path, status: int, kind: WeightProblem
) -> None:
    repo = public_repo.with_faults("tokenizer.json", FileFaults(status=status))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused(kind) as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert caught.value.file == "tokenizer.json"
    assert caught.value.found.startswith(f"HTTP {status}")
    assert hub.downloads(repo.repo_id) == ()
    assert_nothing_left(models_dir, destination)


def test_wrong_lfs_sha256_is_a_mismatch_after_download(public_repo: FakeRepo, models_dir: Path) -> None:
    repo = public_repo.with_faults(WEIGHTS, FileFaults(digest="wrong"))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused("checksum-mismatch") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    error = caught.value
    actual = repo.files[WEIGHTS].sha256
    assert error.file == WEIGHTS
    assert error.found == f"sha256 {actual}"
    assert error.expected.startswith("sha256 ") and actual not in error.expected
    assert str(error) == (
        f"checksum mismatch: {repo.repo_id}@main ({repo.commit}) file {WEIGHTS}: "
        f"expected {error.expected}, found {error.found}"
    )
    assert WEIGHTS in hub.downloads(repo.repo_id), "the bad bytes were staged, then removed"
    assert_nothing_left(models_dir, destination)


def test_safetensors_without_lfs_sha256_is_a_hard_failure_before_any_download(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    repo = public_repo.with_faults(WEIGHTS, FileFaults(digest="absent"))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused("missing-checksum") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert caught.value.file == WEIGHTS
    assert "x-linked-etag" in caught.value.expected
    assert caught.value.found == repr(repo.files[WEIGHTS].git_blob_sha1), "fell back to git ETag"
    assert hub.downloads(repo.repo_id) == ()
    assert_nothing_left(models_dir, destination)


def test_small_git_file_with_wrong_blob_sha1_is_a_mismatch(public_repo: FakeRepo, models_dir: Path) -> None:
    repo = public_repo.with_faults("config.json", FileFaults(digest="wrong"))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused("checksum-mismatch") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert caught.value.file == "config.json"
    assert caught.value.found == f"git-blob-sha1 {repo.files['config.json'].git_blob_sha1}"
    assert_nothing_left(models_dir, destination)


def test_small_git_file_without_any_etag_is_unverifiable(public_repo: FakeRepo, models_dir: Path) -> None:
    repo = public_repo.with_faults("tokenizer.json", FileFaults(digest="absent"))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused("missing-checksum") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert (caught.value.file, caught.value.found) == ("tokenizer.json", "no etag")
    assert hub.downloads(repo.repo_id) == ()
    assert_nothing_left(models_dir, destination)


def test_connection_dropped_once_is_resumed_and_still_verified(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    repo = public_repo.with_faults(WEIGHTS, FileFaults(drop_after_bytes=1000))
    with running_fake_hub([repo]) as hub:
        snapshot = fetch_verified(repo.repo_id, "main", models_dir / "target", endpoint=hub.base_url)

    gets = [r for r in hub.file_requests(repo.repo_id, WEIGHTS) if r.method == "GET"]
    assert len(gets) == 2
    assert {f.path: f.sha256 for f in snapshot.files}[WEIGHTS] == repo.files[WEIGHTS].sha256
    assert staging_leftovers(models_dir) == []


def test_connection_dropped_for_good_is_a_transfer_error(public_repo: FakeRepo, models_dir: Path) -> None:
    repo = public_repo.with_faults(WEIGHTS, FileFaults(drop_after_bytes=1000, after_drop="refuse"))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused("transfer") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert repo.repo_id in str(caught.value)
    assert len([r for r in hub.file_requests(repo.repo_id, WEIGHTS) if r.method == "GET"]) > 1
    assert_nothing_left(models_dir, destination)


def test_retry_that_returns_the_wrong_bytes_is_caught_by_the_sha256(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    repo = public_repo.with_faults(WEIGHTS, FileFaults(drop_after_bytes=1000, after_drop="corrupt"))
    destination = models_dir / "target"
    with running_fake_hub([repo]) as hub, refused("checksum-mismatch") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert caught.value.file == WEIGHTS
    assert caught.value.expected == f"sha256 {repo.files[WEIGHTS].sha256}"
    assert_nothing_left(models_dir, destination)


def test_not_enough_free_space_is_refused_before_any_download(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    needed = sum(
        len(f.content)
        for path, f in public_repo.files.items()
        if any(fnmatch.fnmatchcase(path, pattern) for pattern in DEFAULT_ALLOW_PATTERNS)
    )
    seen: list[Path] = []

    def almost_enough(where: Path) -> int:
        seen.append(where)
        return needed - 1

    destination = models_dir / "target"
    with running_fake_hub([public_repo]) as hub, refused("disk-space") as caught:
        fetch_verified(
            public_repo.repo_id, "main", destination, endpoint=hub.base_url, disk_free=almost_enough
        )

    assert caught.value.expected == f"{needed} bytes free"
    assert caught.value.found == f"{needed - 1} bytes free in {models_dir}"
    assert seen == [models_dir]
    assert hub.downloads(public_repo.repo_id) == ()
    assert_nothing_left(models_dir, destination)


def test_a_different_existing_destination_is_refused_and_left_alone(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    destination = models_dir / "target"
    destination.mkdir()
    (destination / "model.safetensors").write_bytes(b"someone else's weights")
    before = tree_bytes(destination)
    with running_fake_hub([public_repo]) as hub, refused("destination-conflict") as caught:
        fetch_verified(public_repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert str(destination) in caught.value.found
    assert tree_bytes(destination) == before
    assert hub.downloads(public_repo.repo_id) == ()
    assert staging_leftovers(models_dir) == []


def test_index_naming_a_shard_the_repo_lacks_is_an_incomplete_snapshot(models_dir: Path) -> None:
    files = tiny_model_files(seed=4, shards=2)
    repo = FakeRepo.from_contents("specgate-test/broken-index", files).without(
        "model-00002-of-00002.safetensors"
    )
    destination = models_dir / "broken"
    with running_fake_hub([repo]) as hub, refused("file-set") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert caught.value.file == "model.safetensors.index.json"
    assert "model-00002-of-00002.safetensors" in caught.value.found
    assert_nothing_left(models_dir, destination)


def test_a_repo_without_safetensors_weights_is_refused(models_dir: Path) -> None:
    files = tiny_model_files(seed=5)
    repo = FakeRepo.from_contents("specgate-test/pickle-only", files).without(WEIGHTS)
    destination = models_dir / "pickle-only"
    with running_fake_hub([repo]) as hub, refused("file-set") as caught:
        fetch_verified(repo.repo_id, "main", destination, endpoint=hub.base_url)

    assert "*.safetensors" in caught.value.expected
    assert hub.downloads(repo.repo_id) == ()
    assert_nothing_left(models_dir, destination)


def test_unreachable_hub_is_a_transfer_error(models_dir: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    destination = models_dir / "target"
    with refused("transfer") as caught:
        fetch_verified(
            "specgate-test/tiny-target",
            "main",
            destination,
            endpoint=f"http://127.0.0.1:{closed_port}",
        )

    assert caught.value.file is None
    assert_nothing_left(models_dir, destination)


def test_a_concurrent_writer_with_other_files_wins_and_is_left_alone(
    public_repo: FakeRepo, models_dir: Path
) -> None:
    destination = models_dir / "target"
    rival_files = {"model.safetensors": b"rival bytes"}

    def rival_writes_first(where: Path) -> int:
        destination.mkdir()
        for path, data in rival_files.items():
            (destination / path).write_bytes(data)
        return 1 << 40

    with running_fake_hub([public_repo]) as hub, refused("destination-conflict"):
        fetch_verified(
            public_repo.repo_id,
            "main",
            destination,
            endpoint=hub.base_url,
            disk_free=rival_writes_first,
        )

    assert "model.safetensors" in hub.downloads(public_repo.repo_id)
    assert tree_bytes(destination) == rival_files
    assert staging_leftovers(models_dir) == []
