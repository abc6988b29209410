"""Verified model-weight downloads.

A pinned model pair is only worth something if the bytes an engine loads are the
bytes the hub published. ``huggingface_hub.snapshot_download`` fetches files but does
not check them against the hub's sha256, so this module wraps it: every allowed file's
digest is read from the hub first (``x-linked-etag`` for LFS files, the git blob sha1
``ETag`` for small git files), a safetensors file without an LFS sha256 is refused, the
snapshot is staged under ``<destination.parent>/.incomplete/`` and moved into place with
one directory rename only after every digest matched. Any failure removes the staging
area, so a destination either holds a complete verified snapshot or does not exist.

``huggingface_hub`` is imported inside the functions that need it, so importing this
module (and the pytest plugin) stays cheap.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_specgate._version import __version__
from pytest_specgate.contracts.progress import StepProgress, progress_for

if TYPE_CHECKING:
    from huggingface_hub import HfFileMetadata

__all__ = [
    "DEFAULT_ALLOW_PATTERNS",
    "INCOMPLETE_DIRNAME",
    "WEIGHT_PROBLEMS",
    "VerifiedFile",
    "VerifiedSnapshot",
    "WeightProblem",
    "WeightVerificationError",
    "fetch_verified",
    "free_bytes",
]

DEFAULT_ALLOW_PATTERNS: tuple[str, ...] = (
    "*.safetensors",
    "*.safetensors.index.json",
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "tokenizer.model",
    "chat_template.jinja",
    "chat_template.json",
)
"""Files an engine needs to serve a model; everything else in a repo is never fetched."""

INCOMPLETE_DIRNAME = ".incomplete"
"""Staging directory, a sibling of the destination so the final move is one rename."""

_HF_METADATA_DIRNAME = ".cache"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_GIT_SHA1_HEX = re.compile(r"[0-9a-f]{40}")
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "requests", "urllib3"})
_HASH_CHUNK_BYTES = 1 << 20
_LIBRARY_NAME = "pytest-specgate"

DigestKind = Literal["sha256", "git-blob-sha1"]
DiskFree = Callable[[Path], int]


WeightProblem = Literal[
    "hub-access", "not-found", "transfer", "disk-space", "missing-checksum", "checksum-mismatch",
    "file-set", "destination-conflict",
]
WEIGHT_PROBLEMS: Final[Mapping[WeightProblem, str]] = {
    "hub-access": "hub refused access",  # 401/403: token missing, wrong or not granted
    "not-found": "not found on the hub",  # 404: repo, revision or file
    "transfer": "download failed",  # the connection failed or dropped and resuming gave up
    "disk-space": "not enough disk space",  # before the download, or ENOSPC/EFBIG while writing
    "missing-checksum": "no checksum to verify against",  # for safetensors: no LFS sha256
    "checksum-mismatch": "checksum mismatch",  # bytes differ from the published digest or size
    "file-set": "incomplete snapshot",  # none to serve, missing or extra files, a dangling shard
    "destination-conflict": "destination already holds different files",
}
"""What can stop a verified fetch, each with the words its message starts with."""


class WeightVerificationError(Exception):
    """A pinned snapshot could not be fetched and verified; nothing was left behind.

    ``problem`` says which step failed (a key of ``WEIGHT_PROBLEMS``); the message names it,
    the repo, the revision, the file (``None`` for the whole snapshot), what was expected and
    what was found, so it alone tells a user which pin broke and how.
    """

    def __init__(self, problem: WeightProblem, *, repo_id: str, revision: str, file: str | None,
                 expected: str, found: str) -> None:
        self.problem = problem
        self.repo_id = repo_id
        self.revision = revision
        self.file = file
        self.expected = expected
        self.found = found
        where = f"{repo_id}@{revision}" + ("" if file is None else f" file {file}")
        super().__init__(f"{WEIGHT_PROBLEMS[problem]}: {where}: expected {expected}, found {found}")


@dataclass(frozen=True)
class VerifiedFile:
    """One file of a verified snapshot; ``verified_by`` is the hub digest its bytes matched."""

    path: str
    size: int
    sha256: str
    verified_by: DigestKind


@dataclass(frozen=True)
class VerifiedSnapshot:
    """A snapshot on disk whose every file matched the hub's digests at ``revision``."""

    repo_id: str
    requested_revision: str
    revision: str
    destination: Path
    files: tuple[VerifiedFile, ...]

    def to_record(self) -> dict[str, object]:
        """Plain JSON data for an evidence record (model id and weight digests)."""
        return {
            "repo_id": self.repo_id,
            "requested_revision": self.requested_revision,
            "revision": self.revision,
            "files": [
                {"path": f.path, "size": f.size, "sha256": f.sha256, "verified_by": f.verified_by}
                for f in self.files
            ],
        }


@dataclass(frozen=True)
class _Pin:
    """What is being fetched, for error messages: the requested revision and its commit."""

    repo_id: str
    requested: str
    commit: str | None = None

    @property
    def revision_label(self) -> str:
        if self.commit is None or self.commit == self.requested:
            return self.requested
        return f"{self.requested} ({self.commit})"

    def error(
        self,
        problem: WeightProblem,
        file: str | None,
        expected: str,
        found: str,
    ) -> WeightVerificationError:
        return WeightVerificationError(
            problem,
            repo_id=self.repo_id,
            revision=self.revision_label,
            file=file,
            expected=expected,
            found=found,
        )


@dataclass(frozen=True)
class _ExpectedFile:
    path: str
    size: int | None
    digest_kind: DigestKind
    digest: str


@dataclass(frozen=True)
class _FileDigests:
    size: int
    sha256: str
    git_blob_sha1: str


def free_bytes(path: Path) -> int:
    """Free bytes on the filesystem holding ``path`` (its nearest existing ancestor)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def fetch_verified(
    repo_id: str,
    revision: str,
    destination: str | os.PathLike[str],
    *,
    allow_patterns: str | Sequence[str] = DEFAULT_ALLOW_PATTERNS,
    token: str | bool | None = None,
    endpoint: str | None = None,
    disk_free: DiskFree = free_bytes,
) -> VerifiedSnapshot:
    """Fetch ``repo_id`` at ``revision`` into ``destination``, verified, or leave nothing.

    ``revision`` (branch, tag or commit) is resolved to a commit once and everything
    after uses that commit, so a branch moving mid-download cannot mix two snapshots.
    ``token`` follows huggingface_hub: ``None`` uses the stored token, ``False`` sends
    none. ``endpoint`` overrides ``HF_ENDPOINT`` (which huggingface_hub reads at import).
    If ``destination`` already holds exactly this snapshot it is re-verified and
    returned without a download; anything else there is a ``"destination-conflict"``.

    Raises a ``WeightVerificationError`` naming its problem on any failure; the staging area is
    removed and ``destination`` is left as it was.
    """
    target = Path(destination).absolute()
    patterns = (allow_patterns,) if isinstance(allow_patterns, str) else tuple(allow_patterns)
    pin = _Pin(repo_id=repo_id, requested=revision)
    with _hub_errors_as(pin, file=None):
        commit, repo_files = _resolve(repo_id, revision, token=token, endpoint=endpoint)
    pin = _Pin(repo_id=repo_id, requested=revision, commit=commit)
    wanted = _allowed(repo_files, patterns)
    _require_weights(pin, wanted, patterns)
    expected = tuple(
        _expected_file(pin, path, _file_metadata(pin, commit, path, token=token, endpoint=endpoint))
        for path in wanted
    )
    if _holds_files(target):
        return _snapshot(pin, commit, target, _verify_existing(pin, target, expected))
    _require_free_space(pin, target.parent, expected, disk_free)
    target.parent.mkdir(parents=True, exist_ok=True)
    sizes = [file.size for file in expected]
    total_bytes = None if None in sizes else sum(size or 0 for size in sizes)
    with _staging_area(target) as work:
        staged = work / "snapshot"
        with _hub_errors_as(pin, file=None), _reporting_bytes(repo_id, total_bytes) as bars:
            _download(
                repo_id,
                commit,
                staged,
                cache_dir=work / "hf-cache",
                allow_patterns=patterns,
                token=token,
                endpoint=endpoint,
                tqdm_class=bars,
            )
        shutil.rmtree(staged / _HF_METADATA_DIRNAME, ignore_errors=True)
        files = _verify_tree(pin, staged, expected)
        _move_into_place(pin, staged, target, expected)
    return _snapshot(pin, commit, target, files)


def _resolve(
    repo_id: str, revision: str, *, token: str | bool | None, endpoint: str | None
) -> tuple[str, tuple[str, ...]]:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token, library_name=_LIBRARY_NAME, library_version=__version__)
    info = api.model_info(repo_id, revision=revision)
    if info.sha is None:
        raise _Pin(repo_id, revision).error(
            "not-found", None, "a commit sha for the revision", "none in the model info"
        )
    return info.sha, tuple(sibling.rfilename for sibling in info.siblings or ())


def _allowed(repo_files: Sequence[str], allow_patterns: Sequence[str]) -> tuple[str, ...]:
    """The files ``snapshot_download`` will fetch: its rule is ``fnmatchcase`` with ``*``
    crossing ``/`` and a trailing ``/`` meaning the whole folder."""
    patterns = [p + "*" if p.endswith("/") else p for p in allow_patterns]
    return tuple(sorted(f for f in repo_files if any(fnmatch.fnmatchcase(f, p) for p in patterns)))


def _require_weights(pin: _Pin, wanted: Sequence[str], allow_patterns: Sequence[str]) -> None:
    if not any(path.endswith(".safetensors") for path in wanted):
        raise pin.error(
            "file-set",
            None,
            f"at least one *.safetensors file matching {list(allow_patterns)}",
            f"{list(wanted)}",
        )


def _file_metadata(
    pin: _Pin, commit: str, path: str, *, token: str | bool | None, endpoint: str | None
) -> HfFileMetadata:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(pin.repo_id, path, revision=commit, endpoint=endpoint)
    with _hub_errors_as(pin, file=path):
        return get_hf_file_metadata(
            url,
            token=token,
            endpoint=endpoint,
            library_name=_LIBRARY_NAME,
            library_version=__version__,
        )


def _expected_file(pin: _Pin, path: str, metadata: HfFileMetadata) -> _ExpectedFile:
    """The digest the hub vouches for; safetensors must carry an LFS sha256."""
    etag = (metadata.etag or "").lower()
    if _SHA256_HEX.fullmatch(etag):
        return _ExpectedFile(path, metadata.size, "sha256", etag)
    if not path.endswith(".safetensors") and _GIT_SHA1_HEX.fullmatch(etag):
        return _ExpectedFile(path, metadata.size, "git-blob-sha1", etag)
    wanted = (
        "an LFS sha256 (64 hex) in x-linked-etag"
        if path.endswith(".safetensors")
        else "an LFS sha256 x-linked-etag or a git blob sha1 etag"
    )
    found = repr(metadata.etag) if metadata.etag else "no etag"
    raise pin.error("missing-checksum", path, wanted, found)


def _holds_files(target: Path) -> bool:
    return target.is_symlink() or target.is_file() or (target.is_dir() and any(target.iterdir()))


def _verify_existing(
    pin: _Pin, target: Path, expected: Sequence[_ExpectedFile]
) -> tuple[VerifiedFile, ...]:
    """The files already at ``target``, verified; anything else there is a conflict."""
    try:
        return _verify_tree(pin, target, expected)
    except WeightVerificationError as error:
        raise pin.error(
            "destination-conflict", error.file, error.expected, f"{error.found} in {target}"
        ) from error


def _snapshot(pin: _Pin, commit: str, target: Path, files: tuple[VerifiedFile, ...]) -> VerifiedSnapshot:
    return VerifiedSnapshot(
        repo_id=pin.repo_id,
        requested_revision=pin.requested,
        revision=commit,
        destination=target,
        files=files,
    )


def _require_free_space(
    pin: _Pin, where: Path, expected: Sequence[_ExpectedFile], disk_free: DiskFree
) -> None:
    needed = sum(f.size or 0 for f in expected)
    available = disk_free(where)
    if available < needed:
        raise pin.error("disk-space", None, f"{needed} bytes free", f"{available} bytes free in {where}")


@contextmanager
def _staging_area(target: Path) -> Iterator[Path]:
    """A unique work directory under ``.incomplete/``, removed however the block ends."""
    root = target.parent / INCOMPLETE_DIRNAME
    work = root / f"{target.name}.{uuid.uuid4().hex}"
    work.mkdir(parents=True)
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with suppress(OSError):  # another fetch may be staging next to us
            root.rmdir()


def _download(
    repo_id: str,
    commit: str,
    local_dir: Path,
    *,
    cache_dir: Path,
    allow_patterns: Sequence[str],
    token: str | bool | None,
    endpoint: str | None,
    tqdm_class: type[Any] | None,
) -> None:
    """``snapshot_download`` in local-dir mode with a private cache, so the user's
    huggingface cache is neither read nor written; ``tqdm_class`` counts the bytes."""
    from huggingface_hub import snapshot_download

    snapshot_download(
        repo_id,
        revision=commit,
        local_dir=local_dir,
        cache_dir=cache_dir,
        allow_patterns=list(allow_patterns),
        token=token,
        endpoint=endpoint,
        library_name=_LIBRARY_NAME,
        library_version=__version__,
        tqdm_class=tqdm_class,
    )


@contextmanager
def _reporting_bytes(repo_id: str, total_bytes: int | None) -> Iterator[type[Any] | None]:
    """A tqdm class for ``snapshot_download`` that forwards the bytes it counts to the
    running test's progress (None, and huggingface_hub's own bars, when nobody reads it)."""
    step = progress_for(f"download {repo_id}")
    if step is None:
        yield None
        return
    counter = _ByteCounter(step, total_bytes)
    yield _counting_bars(counter)
    counter.close()


class _ByteCounter:
    """Bytes seen by huggingface_hub's byte bars, from its download threads.

    It keeps one byte bar per stream (bytes received, bytes written) and both count the
    same files, so the download's progress is the furthest bar, not their sum.
    """

    def __init__(self, step: StepProgress, total_bytes: int | None) -> None:
        self._step = step
        self._total = total_bytes
        self._by_bar: dict[int, int] = {}
        self._lock = threading.Lock()

    def add(self, bar: object, count: int) -> None:
        with self._lock:
            self._by_bar[id(bar)] = self._by_bar.get(id(bar), 0) + count
            self._step.transferred(self._done(), self._total)

    def close(self) -> None:
        with self._lock:
            self._step.transferred(self._done(), self._total, done=True)

    def _done(self) -> int:
        return max(self._by_bar.values(), default=0)


def _counting_bars(counter: _ByteCounter) -> type[Any]:
    """huggingface_hub's tqdm, never drawn, whose byte bars (``unit="B"``) feed ``counter``."""
    from huggingface_hub.utils.tqdm import tqdm

    class CountingBar(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._counts_bytes = kwargs.get("unit") == "B"
            super().__init__(*args, **{**kwargs, "disable": True})  # type: ignore[no-untyped-call]

        def update(self, n: float | None = 1) -> bool | None:
            if self._counts_bytes and n:
                counter.add(self, int(n))
            result: bool | None = super().update(n)
            return result

    return CountingBar


def _verify_tree(pin: _Pin, root: Path, expected: Sequence[_ExpectedFile]) -> tuple[VerifiedFile, ...]:
    present = _relative_files(root)
    wanted = {f.path for f in expected}
    if present != wanted:
        raise pin.error(
            "file-set",
            None,
            f"exactly {sorted(wanted)}",
            f"missing {sorted(wanted - present)}, unexpected {sorted(present - wanted)}",
        )
    files = tuple(_verify_file(pin, root, f) for f in sorted(expected, key=lambda f: f.path))
    _require_index_shards(pin, root, {f.path for f in files})
    return files


def _relative_files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if not path.is_dir()}


def _verify_file(pin: _Pin, root: Path, expected: _ExpectedFile) -> VerifiedFile:
    digests = _digests(root / expected.path)
    if expected.size is not None and digests.size != expected.size:
        raise pin.error(
            "checksum-mismatch",
            expected.path,
            f"{expected.size} bytes",
            f"{digests.size} bytes",
        )
    found = digests.sha256 if expected.digest_kind == "sha256" else digests.git_blob_sha1
    if found != expected.digest:
        raise pin.error(
            "checksum-mismatch",
            expected.path,
            f"{expected.digest_kind} {expected.digest}",
            f"{expected.digest_kind} {found}",
        )
    return VerifiedFile(expected.path, digests.size, digests.sha256, expected.digest_kind)


def _digests(path: Path) -> _FileDigests:
    """sha256 and git blob sha1 in one streaming pass (git hashes a ``blob <size>\\0`` header)."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    git_sha1 = hashlib.sha1(f"blob {size}\0".encode())
    with path.open("rb") as stream:
        while chunk := stream.read(_HASH_CHUNK_BYTES):
            sha256.update(chunk)
            git_sha1.update(chunk)
    return _FileDigests(size=size, sha256=sha256.hexdigest(), git_blob_sha1=git_sha1.hexdigest())


def _require_index_shards(pin: _Pin, root: Path, present: set[str]) -> None:
    """Every shard a ``*.safetensors.index.json`` names must be part of the snapshot."""
    for index in sorted(p for p in present if p.endswith(".safetensors.index.json")):
        shards = _index_shards(pin, root, index)
        folder = Path(index).parent
        missing = sorted(s for s in shards if (folder / s).as_posix() not in present)
        if missing:
            raise pin.error("file-set", index, f"shards {sorted(shards)} present", f"missing {missing}")


def _index_shards(pin: _Pin, root: Path, index: str) -> set[str]:
    try:
        weight_map = json.loads((root / index).read_text(encoding="utf-8"))["weight_map"]
    except (ValueError, KeyError, TypeError) as error:
        raise pin.error(
            "file-set", index, "a JSON object with a weight_map", f"unreadable index ({error})"
        ) from error
    if not isinstance(weight_map, Mapping):
        raise pin.error("file-set", index, "weight_map to be an object", type(weight_map).__name__)
    return {str(shard) for shard in weight_map.values()}


def _move_into_place(pin: _Pin, staged: Path, target: Path, expected: Sequence[_ExpectedFile]) -> None:
    """One rename; if a concurrent fetch won the race, accept its copy only if identical."""
    try:
        os.rename(staged, target)
    except OSError as error:
        if error.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise
        _verify_existing(pin, target, expected)


@contextmanager
def _hub_errors_as(pin: _Pin, *, file: str | None) -> Iterator[None]:
    """Re-raise hub, transport and disk-full failures as ``WeightVerificationError``;
    local faults such as a permission error keep their own type."""
    try:
        yield
    except WeightVerificationError:
        raise
    except Exception as error:  # hub, transport and disk errors by type (_translate); the rest re-raised
        translated = _translate(pin, file, error)
        if translated is None:
            raise
        raise translated from error


def _translate(pin: _Pin, file: str | None, error: Exception) -> WeightVerificationError | None:
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if isinstance(error, HfHubHTTPError):
        return _http_error(pin, file, error.response.status_code, str(error))
    if isinstance(error, LocalEntryNotFoundError) or _is_transport_error(error):
        return pin.error("transfer", file, "a complete response from the hub", _oneline(error))
    if isinstance(error, OSError) and error.errno in _DISK_FULL_ERRNOS:
        written = "" if error.filename is None else f" writing {error.filename}"
        reason = f"{errno.errorcode[error.errno]} ({error.strerror}){written}"
        return pin.error("disk-space", file, "room to write the snapshot", reason)
    if isinstance(error, OSError) and error.errno is None:
        return pin.error("transfer", file, "a complete download from the hub", _oneline(error))
    return None


def _http_error(pin: _Pin, file: str | None, status: int, message: str) -> WeightVerificationError:
    found = f"HTTP {status}: {_oneline(message)}"
    if status in (401, 403):
        return pin.error("hub-access", file, "access with the given token", found)
    if status == 404:
        return pin.error("not-found", file, "the repo, revision and file to exist", found)
    return pin.error("transfer", file, "a successful hub response", found)


def _is_transport_error(error: Exception) -> bool:
    return any(cls.__module__.split(".")[0] in _TRANSPORT_MODULES for cls in type(error).__mro__)


def _oneline(error: object) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 300 else text[:297] + "..."
